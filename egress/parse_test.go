package egress

import (
	"errors"
	"strings"
	"testing"

	"airlock.dev/airlock/tool"
)

func TestParseURLAccepts(t *testing.T) {
	tests := []struct {
		in, url, host string
		port          int
	}{
		{"https://example.com", "https://example.com", "example.com", 443},
		{"http://example.com/a/b?q=1", "http://example.com/a/b?q=1", "example.com", 80},
		{"HTTP://EXAMPLE.COM/Path", "http://example.com/Path", "example.com", 80},
		{"https://example.com./x", "https://example.com/x", "example.com", 443},
		{"https://example.com:443/", "https://example.com/", "example.com", 443},
		{"http://example.com:8080/", "http://example.com:8080/", "example.com", 8080},
		{"https://example.com/#frag", "https://example.com/", "example.com", 443},
		{"https://example.com/a@b", "https://example.com/a@b", "example.com", 443},
		{"https://bücher.example/", "https://xn--bcher-kva.example/", "xn--bcher-kva.example", 443},
		{"https://ＥＸＡＭＰＬＥ.com/", "https://example.com/", "example.com", 443}, // full-width, mapped by UTS#46
		{"http://93.184.216.34/", "http://93.184.216.34/", "93.184.216.34", 80},
		{"http://[2606:4700::1111]:8443/", "http://[2606:4700::1111]:8443/", "2606:4700::1111", 8443},
		{"http://[2606:4700:0::1111]/", "http://[2606:4700::1111]/", "2606:4700::1111", 80},
		{"https://1.2.3.example.com/", "https://1.2.3.example.com/", "1.2.3.example.com", 443},
		{"https://example.com/%7Euser", "https://example.com/%7Euser", "example.com", 443},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.in)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tt.in, err)
			continue
		}
		if got.URL.String() != tt.url || got.Host != tt.host || got.Port != tt.port {
			t.Errorf("ParseURL(%q) = %s host %s port %d, want %s host %s port %d",
				tt.in, got.URL, got.Host, got.Port, tt.url, tt.host, tt.port)
		}
	}
}

// TestParseURLRefuses lists every encoding trick and ambiguity the strict
// parser refuses, with a word its reason must contain.
func TestParseURLRefuses(t *testing.T) {
	tests := []struct {
		in   string
		code tool.Code
		why  string
	}{
		// User information and the @ that two parsers split differently.
		{"http://user:pass@example.com/", CodeInvalidURL, "user information"},
		{"http://example.com@evil.com/", CodeInvalidURL, "user information"},
		{`http://a.com\@b.com/`, CodeInvalidURL, "backslash"},
		{"http://a.com#@b.com/", CodeInvalidURL, "@"},
		{"http://a.com?@b.com/", CodeInvalidURL, "@"},
		{"http://a.com:80@b.com/", CodeInvalidURL, "@"},
		{"http://a.com:80#@b.com/", CodeInvalidURL, "@"},
		{`http:\\a.com/`, CodeInvalidURL, "backslash"},
		{`http://a.com\b.com/`, CodeInvalidURL, "backslash"},
		// White space and control characters.
		{"http://a.com\t/", CodeInvalidURL, "white space"},
		{"http://a.\nb.com/", CodeInvalidURL, "white space"},
		{"http://a.com/\r\nHost: b", CodeInvalidURL, "white space"},
		{" http://a.com/", CodeInvalidURL, "white space"},
		{"http://a.com/ x", CodeInvalidURL, "white space"},
		{"http://a.com/\x00", CodeInvalidURL, "control"},
		{"http://a.com/\x7f", CodeInvalidURL, "control"},
		{"http://a\u00a0.com/", CodeInvalidURL, "white space"},
		{"http://ex\u00adample.com/", CodeInvalidURL, "control"}, // soft hyphen, which IDNA would delete
		{"http://ex\u200bample.com/", CodeInvalidURL, "control"},
		{"http://a.com/\xff", CodeInvalidURL, "UTF-8"},
		// Non-canonical numeric IPv4.
		{"http://2130706433/", CodeInvalidURL, "single decimal"},
		{"http://0177.0.0.1/", CodeInvalidURL, "octal"},
		{"http://0x7f.1/", CodeInvalidURL, "hexadecimal"},
		{"http://0x7f000001/", CodeInvalidURL, "hexadecimal"},
		{"http://127.1/", CodeInvalidURL, "fewer than four"},
		{"http://127.0.1/", CodeInvalidURL, "fewer than four"},
		{"http://127.000.000.001/", CodeInvalidURL, "octal"},
		{"http://256.1.1.1/", CodeInvalidURL, "over 255"},
		{"http://1.2.3.4.5/", CodeInvalidURL, "more than four"},
		{"http://example.0x1/", CodeInvalidURL, "hexadecimal"},
		{"http://foo.123/", CodeInvalidURL, "non-canonical"},
		{"http://１２７.０.０.１/", CodeDenied, "loopback"}, // full-width digits map to 127.0.0.1
		{"http://127.0.0.1./", CodeDenied, "loopback"},
		// Percent-encoded and otherwise odd hosts.
		{"http://%31%32%37.0.0.1/", CodeInvalidURL, "percent"},
		{"http://exa%6dple.com/", CodeInvalidURL, "percent"},
		{"http://[fe80::1%25eth0]/", CodeInvalidURL, "zone"},
		{"http://[::1/", CodeInvalidURL, "]"},
		{"http://[1.2.3.4]/", CodeInvalidURL, "IPv6"},
		{"http://[::1]x/", CodeInvalidURL, "after the IPv6"},
		{"http://::1/", CodeInvalidURL, "more than one colon"},
		{"http://a..com/", CodeInvalidURL, "empty label"},
		{"http://.a.com/", CodeInvalidURL, "empty label"},
		{"http://a.com../", CodeInvalidURL, "empty label"},
		{"http://a_b.com/", CodeInvalidURL, "host"},
		{"http://-a.com/", CodeInvalidURL, "host"},
		{"http://a.com:/", CodeInvalidURL, "empty port"},
		{"http://a.com:0/", CodeInvalidURL, "range"},
		{"http://a.com:65536/", CodeInvalidURL, "range"},
		{"http://a.com:080/", CodeInvalidURL, "leading zero"},
		{"http://a.com:8o/", CodeInvalidURL, "not a number"},
		{"http://" + strings.Repeat("a", 64) + ".com/", CodeInvalidURL, "MaxLabelLength"},
		{"http://" + strings.Repeat("a.", 127) + "com/", CodeInvalidURL, "MaxHostLength"},
		{"http://a.com/" + strings.Repeat("x", MaxURLLength), CodeInvalidURL, "MaxURLLength"},
		// Scheme and shape.
		{"ftp://a.com/", CodeDenied, "scheme"},
		{"file:///etc/passwd", CodeDenied, "scheme"},
		{"gopher://a.com/", CodeDenied, "scheme"},
		{"a.com/x", CodeInvalidURL, "scheme"},
		{"//a.com/x", CodeInvalidURL, "scheme"},
		{"http:a.com", CodeInvalidURL, "two slashes"},
		{"http:/a.com", CodeInvalidURL, "two slashes"},
		{"http:///a.com", CodeInvalidURL, "two slashes"},
		{"http://", CodeInvalidURL, "no host"},
		{"http:///", CodeInvalidURL, "two slashes"},
		{"http://?x", CodeInvalidURL, "no host"},
		{"", CodeInvalidURL, "scheme"},
	}
	for _, tt := range tests {
		_, err := ParseURL(tt.in)
		if tt.code == CodeDenied && err == nil {
			// The URL parses; the policy refuses it.
			c, _ := NewClient(nil)
			err = c.Check(t.Context(), tt.in)
		}
		var te *tool.Error
		if !errors.As(err, &te) {
			t.Errorf("%q: got %v, want %s", tt.in, err, tt.code)
			continue
		}
		if te.Code != tt.code || !strings.Contains(te.Message, tt.why) || te.Hint == "" {
			t.Errorf("%q: got %s %q (hint %q), want %s saying %q", tt.in, te.Code, te.Message, te.Hint, tt.code, tt.why)
		}
	}
}
