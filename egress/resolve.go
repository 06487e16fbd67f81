package egress

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
)

// MaxPinAddrs bounds the addresses one pin may name.
const MaxPinAddrs = 16

// Pins map host names to the addresses they resolve to, for tests and for
// airlock's --resolve flag.
type Pins map[string][]netip.Addr

// ParsePin parses "HOST:IP[,IP...]" and adds it to the pins. The host is
// normalised as a URL's host is, so that a pin matches what the URL
// names.
func (p Pins) ParsePin(s string) error {
	host, list, ok := strings.Cut(s, ":")
	if !ok || host == "" || list == "" {
		return fmt.Errorf("resolve %q: want HOST:IP[,IP...]", s)
	}
	hp, err := compileHostPattern(host)
	if err != nil || hp.suffix != "" {
		return fmt.Errorf("resolve %q: %q is not a host name", s, host)
	}
	ips := strings.Split(list, ",")
	if len(ips) > MaxPinAddrs {
		return fmt.Errorf("resolve %q: more than %d addresses (MaxPinAddrs)", s, MaxPinAddrs)
	}
	for _, ip := range ips {
		a, err := netip.ParseAddr(strings.Trim(ip, "[]"))
		if err != nil {
			return fmt.Errorf("resolve %q: %q is not an IP address", s, ip)
		}
		p[hp.exact] = append(p[hp.exact], a)
	}
	return nil
}

// Resolver returns a resolver that answers the pinned names from the pins
// and every other name from next (the system's when nil).
func (p Pins) Resolver(next Resolver) Resolver {
	return pinnedResolver{pins: p, next: next}
}

type pinnedResolver struct {
	pins Pins
	next Resolver
}

func (r pinnedResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if addrs, ok := r.pins[strings.TrimSuffix(strings.ToLower(host), ".")]; ok {
		var out []netip.Addr
		for _, a := range addrs {
			if network == "ip" || network == "ip4" && a.Is4() || network == "ip6" && a.Is6() {
				out = append(out, a)
			}
		}
		return out, nil
	}
	if r.next == nil {
		return systemResolver.LookupNetIP(ctx, network, host)
	}
	return r.next.LookupNetIP(ctx, network, host)
}
