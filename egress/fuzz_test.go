package egress

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"airlock.dev/airlock/tool"
)

var egressCodes = map[tool.Code]bool{
	CodeDenied: true, CodeUnresolvable: true, CodeInvalidURL: true, CodeTooLarge: true, CodeContentType: true,
	CodeTimeout: true, CodeRedirectDenied: true, CodeConnectionFailed: true,
}

// wantRefusal fails unless err is an egress error value: a known code, a
// message and a hint.
func wantRefusal(t *testing.T, in string, err error) {
	t.Helper()
	var te *tool.Error
	if !errors.As(err, &te) {
		t.Fatalf("%q: refusal %v (%T) is not a *tool.Error", in, err, err)
	}
	if !egressCodes[te.Code] || te.Message == "" || te.Hint == "" {
		t.Fatalf("%q: refusal %+v lacks a known code, a message or a hint", in, te)
	}
}

// FuzzParseURL: no input panics; a refusal is always an error value; an
// accepted URL is canonical (parsing it again gives the same), net/url
// reads the same host, and a host that is an IP is judged as one.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/a?b#c", "http://user@a.com/", `http://a.com\@b.com`, "http://a.com#@b.com",
		"http://a.com:80@b.com", "http://0x7f.1/", "http://2130706433/", "http://0177.0.0.1/", "http://127.1/",
		"http://[::ffff:127.0.0.1]/", "http://[64:ff9b::a9fe:a9fe]/", "http://bücher.example/", "http://ＥＸＡＭＰＬＥ.com/",
		"http://１２７.０.０.１/", "http://%31%32%37.0.0.1/", "http://a.com./", "http://a.com:/", "HTTP://A.COM:080/",
		"http://[fe80::1%25eth0]/", "http://a\t.com/", "http://xn--bcher-kva.example/", "http://xn--/",
	} {
		f.Add(s)
	}
	r := &countingResolver{}
	c, err := NewClient(&Options{Resolver: r})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tg, err := ParseURL(in)
		if err != nil {
			wantRefusal(t, in, err)
		} else {
			again, err := ParseURL(tg.URL.String())
			if err != nil {
				t.Fatalf("%q: canonical %q does not parse again: %v", in, tg.URL, err)
			}
			if again.URL.String() != tg.URL.String() || again.Host != tg.Host || again.Port != tg.Port {
				t.Fatalf("%q: canonical form %q is not stable: %q", in, tg.URL, again.URL)
			}
			u, err := url.Parse(tg.URL.String())
			if err != nil || u.User != nil || u.Hostname() != tg.Host {
				t.Fatalf("%q: net/url reads %q differently: %v", in, tg.URL, err)
			}
			if tg.Host != strings.ToLower(tg.Host) || strings.HasSuffix(tg.Host, ".") {
				t.Fatalf("%q: host %q is not canonical", in, tg.Host)
			}
			if a, err := netip.ParseAddr(tg.Host); err == nil && a != tg.Addr {
				t.Fatalf("%q: host %q is an address, but Addr is %v", in, tg.Host, tg.Addr)
			}
		}
		// The --resolve parser takes the same text without panicking.
		Pins{}.ParsePin(in)
		// Check judges the URL as written and resolves nothing: it allows
		// a host name, or a public IP literal, and refuses by value.
		if err := c.Check(t.Context(), in); err != nil {
			wantRefusal(t, in, err)
		} else if tg == nil || tg.Addr.IsValid() && nonPublic(tg.Addr) != "" {
			t.Fatalf("%q: allowed, but it names a non-public address", in)
		}
		if n := r.queries.Load(); n != 0 {
			t.Fatalf("%q: Check sent %d DNS queries, want none", in, n)
		}
	})
}

// FuzzNonPublic cross-checks the address classes: a non-public IPv4
// address is non-public in every IPv6 form that embeds it.
func FuzzNonPublic(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "8.8.8.8", "169.254.169.254", "10.0.0.5", "100.100.100.200", "224.0.0.1"} {
		b := netip.MustParseAddr(s).As4()
		f.Add(b[0], b[1], b[2], b[3])
	}
	f.Fuzz(func(t *testing.T, a, b, c, d byte) {
		v4 := netip.AddrFrom4([4]byte{a, b, c, d})
		private := nonPublic(v4) != ""
		forms := map[string]netip.Addr{
			"6to4":      netip.AddrFrom16([16]byte{0x20, 0x02, a, b, c, d, 15: 1}),
			"NAT64":     netip.AddrFrom16([16]byte{0, 0x64, 0xff, 0x9b, 12: a, 13: b, 14: c, 15: d}),
			"NAT64L":    netip.AddrFrom16([16]byte{0, 0x64, 0xff, 0x9b, 0, 1, 12: a, 13: b, 14: c, 15: d}),
			"Teredo":    netip.AddrFrom16([16]byte{0x20, 0x01, 0, 0, 8, 8, 8, 8, 12: ^a, 13: ^b, 14: ^c, 15: ^d}),
			"TeredoSrv": netip.AddrFrom16([16]byte{0x20, 0x01, 0, 0, a, b, c, d, 12: 0xf7, 13: 0xf7, 14: 0xf7, 15: 0xf7}),
		}
		for name, v6 := range forms {
			if got := nonPublic(v6) != ""; got != private {
				t.Errorf("%s of %s (%s): non-public %v, want %v", name, v4, v6, got, private)
			}
		}
		for name, v6 := range map[string]netip.Addr{
			"mapped":     netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: a, 13: b, 14: c, 15: d}),
			"compatible": netip.AddrFrom16([16]byte{12: a, 13: b, 14: c, 15: d}),
			"translated": netip.AddrFrom16([16]byte{8: 0xff, 9: 0xff, 12: a, 13: b, 14: c, 15: d}),
		} {
			if nonPublic(v6) == "" {
				t.Errorf("%s %s is public", name, v6)
			}
		}
	})
}
