// Package egress is airlock's one way out to the network: a URL policy, a
// dialer that enforces it on the address actually connected to, a fetch
// client built on that dialer, and an HTTP proxy that applies the same
// policy to sandboxed commands.
//
// The policy is judged in two places. Check judges the URL as written: it
// parses it strictly (a URL two parsers could read differently is
// refused) and checks scheme, port, host name and an IP literal host, and
// resolves nothing, since a DNS query is itself a message out; the gate
// runs it before a call is allowed to. A fetch then resolves the host
// once and checks every address it resolves to; the dialer connects only
// to an address that was checked, and its Control hook checks the
// socket's address again, so a name that answers differently on a second
// query (DNS rebinding) reaches nothing new. Every redirect is checked
// again.
//
// By default only public addresses on ports 80 and 443, by http or https,
// may be reached: loopback, private, link-local (cloud metadata),
// carrier-grade NAT, unique-local, documentation, benchmarking, reserved
// and multicast ranges are refused, and so are IPv6 forms that embed one
// of them (mapped, compatible, translated, 6to4, Teredo, NAT64).
//
//	c, err := egress.NewClient(nil) // defaults: public hosts, ports 80 and 443
//	if err := c.Check(ctx, "http://169.254.169.254/latest/"); err != nil {
//		// err is a *tool.Error with code egress_denied, a message and a hint
//	}
//	resp, err := c.Fetch(ctx, "https://example.com/", nil)
//
// A refusal is a *tool.Error whose code is one of the Code constants below,
// so that a model can tell a denial (stop retrying) from a fault.
package egress
