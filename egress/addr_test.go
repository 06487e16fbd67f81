package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// TestNonPublic covers every address class the policy refuses, and public
// addresses on each side of the ranges' edges.
func TestNonPublic(t *testing.T) {
	tests := []struct {
		addr string
		want string // a word of the reason; "" for public
	}{
		// IPv4: every special-purpose range, and its neighbours.
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "this network"},
		{"10.0.0.5", "private"},
		{"10.255.255.255", "private"},
		{"11.0.0.1", ""},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.100.100.200", "metadata"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"169.254.169.254", "metadata"},
		{"169.254.0.1", "link-local"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"192.0.0.192", "IETF protocol"},
		{"192.0.2.1", "documentation"},
		{"192.88.99.1", "6to4 relay"},
		{"192.168.1.1", "private"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"198.20.0.0", ""},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "broadcast"},
		{"8.8.8.8", ""},
		{"93.184.216.34", ""},
		{"1.1.1.1", ""},
		{"223.255.255.255", ""},
		// IPv6.
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "IPv4-mapped"},
		{"::ffff:8.8.8.8", "IPv4-mapped"},
		{"::ffff:0:8.8.8.8", "IPv4-translated"},
		{"::8.8.8.8", "IPv4-compatible"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"100::1", "discard"},
		{"2001:db8::1", "documentation"},
		{"3fff::1", "documentation"},
		{"2001:2::1", "benchmarking"},
		{"2001:10::1", "IETF protocol"},
		{"5f00::1", "segment routing"},
		{"fd00:ec2::254", "metadata"},
		{"fc00::1", "unique-local"},
		{"fdff:ffff::1", "unique-local"},
		{"fe80::1", "link-local"},
		{"febf::1", "link-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"4000::1", "global unicast"},
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4001::200e", ""},
		// 6to4 embeds an IPv4 address in bits 16-47.
		{"2002:7f00:1::1", "6to4"},
		{"2002:a9fe:a9fe::1", "6to4"},
		{"2002:c0a8:101::", "6to4"},
		{"2002:808:808::1", ""},
		// Teredo: server in bits 32-63, client inverted in the last 32.
		{"2001:0:7f00:1::", "Teredo"},
		{"2001:0:808:808:0:0:f5ff:fffe", "Teredo"}, // client ^0xf5fffffe = 10.0.0.1
		{"2001:0:808:808:0:0:f7f7:f7f7", ""},       // client 8.8.8.8
		// NAT64, well-known and local-use prefixes.
		{"64:ff9b::7f00:1", "NAT64"},
		{"64:ff9b::a9fe:a9fe", "NAT64"},
		{"64:ff9b::808:808", ""},
		{"64:ff9b:1::a00:5", "NAT64"},
		{"64:ff9b:1::808:808", ""},
		{"fe80::1%eth0", "zone"},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		got := nonPublic(a)
		if (got == "") != (tt.want == "") || !strings.Contains(got, tt.want) {
			t.Errorf("nonPublic(%s) = %q, want it to say %q", tt.addr, got, tt.want)
		}
	}
	if got := nonPublic(netip.Addr{}); got == "" {
		t.Error("the zero Addr is public")
	}
}

// TestEmbeddedReasonNamesBoth checks that a refusal of a transition
// address names the IPv4 address it carries.
func TestEmbeddedReasonNamesBoth(t *testing.T) {
	got := nonPublic(netip.MustParseAddr("64:ff9b::a9fe:a9fe"))
	if !strings.Contains(got, "169.254.169.254") || !strings.Contains(got, "NAT64") {
		t.Errorf("got %q", got)
	}
}
