package egress

import (
	"net/netip"
)

// addrClass is one range of addresses that is not public, with the words a
// refusal uses for it.
type addrClass struct {
	prefix netip.Prefix
	what   string // completes "ADDR is ..."
}

func pfx(s string, what string) addrClass {
	return addrClass{netip.MustParsePrefix(s), what}
}

// v4Classes are the IPv4 ranges that are not public (IANA's special-purpose
// registry, RFC 6890 and successors). Order matters only for the words:
// the first match names the refusal.
var v4Classes = []addrClass{
	pfx("0.0.0.0/32", "the unspecified address"),
	pfx("0.0.0.0/8", `a "this network" address (0.0.0.0/8)`),
	pfx("10.0.0.0/8", "a private address (RFC 1918)"),
	pfx("100.100.100.200/32", "a cloud metadata address (carrier-grade NAT range)"),
	pfx("100.64.0.0/10", "a carrier-grade NAT address (100.64.0.0/10)"),
	pfx("127.0.0.0/8", "a loopback address"),
	pfx("169.254.169.254/32", "the cloud metadata address (link-local)"),
	pfx("169.254.0.0/16", "a link-local address"),
	pfx("172.16.0.0/12", "a private address (RFC 1918)"),
	pfx("192.0.0.0/24", "an IETF protocol assignment (192.0.0.0/24)"),
	pfx("192.0.2.0/24", "a documentation address (TEST-NET-1)"),
	pfx("192.88.99.0/24", "a 6to4 relay anycast address"),
	pfx("192.168.0.0/16", "a private address (RFC 1918)"),
	pfx("198.18.0.0/15", "a benchmarking address (198.18.0.0/15)"),
	pfx("198.51.100.0/24", "a documentation address (TEST-NET-2)"),
	pfx("203.0.113.0/24", "a documentation address (TEST-NET-3)"),
	pfx("224.0.0.0/4", "a multicast address"),
	pfx("255.255.255.255/32", "the broadcast address"),
	pfx("240.0.0.0/4", "a reserved address (240.0.0.0/4)"),
}

// v6Classes are the IPv6 ranges that are not public. The ranges that embed
// an IPv4 address and may be public (6to4, Teredo, NAT64) are not here:
// embedded judges them by the address they embed.
var v6Classes = []addrClass{
	pfx("::/128", "the unspecified address"),
	pfx("::1/128", "a loopback address"),
	pfx("::ffff:0:0/96", "an IPv4-mapped address"),
	pfx("::ffff:0:0:0/96", "an IPv4-translated address"),
	pfx("::/96", "an IPv4-compatible address"),
	pfx("100::/64", "a discard-only address (100::/64)"),
	pfx("2001:db8::/32", "a documentation address (2001:db8::/32)"),
	pfx("3fff::/20", "a documentation address (3fff::/20)"),
	pfx("2001:2::/48", "a benchmarking address (2001:2::/48)"),
	pfx("2001::/23", "an IETF protocol assignment (2001::/23)"),
	pfx("5f00::/16", "a segment routing address (5f00::/16)"),
	pfx("fd00:ec2::254/128", "the cloud metadata address (unique-local)"),
	pfx("fc00::/7", "a unique-local address (fc00::/7)"),
	pfx("fe80::/10", "a link-local address"),
	pfx("fec0::/10", "a site-local address (deprecated)"),
	pfx("ff00::/8", "a multicast address"),
}

// The IPv6 ranges that carry an IPv4 address inside.
var (
	prefix6to4    = netip.MustParsePrefix("2002::/16")      // v4 in bits 16-47
	prefixTeredo  = netip.MustParsePrefix("2001::/32")      // server v4 in bits 32-63, client v4 inverted in 96-127
	prefixNAT64   = netip.MustParsePrefix("64:ff9b::/96")   // v4 in the last 32 bits
	prefixNAT64L  = netip.MustParsePrefix("64:ff9b:1::/48") // local use; v4 in the last 32 bits
	globalUnicast = netip.MustParsePrefix("2000::/3")
)

// nonPublic reports why addr is not a public address, or "" when it is.
// An IPv6 address that embeds an IPv4 one is judged by the IPv4 address
// too, since a gateway on the way may deliver it there.
func nonPublic(addr netip.Addr) string {
	if !addr.IsValid() {
		return "not a valid address"
	}
	if addr.Zone() != "" {
		return "a scoped address (with a zone)"
	}
	if addr.Is4() {
		for _, c := range v4Classes {
			if c.prefix.Contains(addr) {
				return c.what
			}
		}
		return ""
	}
	if inner := embedded(addr); inner != nil {
		for _, v4 := range inner {
			if why := nonPublic(v4.addr); why != "" {
				return v4.via + " embedding " + v4.addr.String() + ", " + why
			}
		}
		return "" // it reaches only the public IPv4 addresses it embeds
	}
	for _, c := range v6Classes {
		if c.prefix.Contains(addr) {
			return c.what
		}
	}
	if !globalUnicast.Contains(addr) {
		return "not a global unicast address (outside 2000::/3)"
	}
	return ""
}

type embeddedV4 struct {
	via  string
	addr netip.Addr
}

// embedded returns the IPv4 addresses a 6to4, Teredo or NAT64 address
// carries.
func embedded(a netip.Addr) []embeddedV4 {
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	switch {
	case prefix6to4.Contains(a):
		return []embeddedV4{{"a 6to4 address", v4(2)}}
	case prefixTeredo.Contains(a):
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return []embeddedV4{{"a Teredo address", v4(4)}, {"a Teredo address", client}}
	case prefixNAT64.Contains(a), prefixNAT64L.Contains(a):
		return []embeddedV4{{"a NAT64 address", v4(12)}}
	}
	return nil
}
