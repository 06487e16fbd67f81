package untrusted

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on the decoding Check does to find a value carried in encoded
// form (a token sent as hex, a host's labels spelling base32, a
// percent-escaped URL in a query).
const (
	// MinEncodedChars is the shortest run that is decoded: shorter runs
	// are words and numbers far more often than encodings, and a value
	// worth tracking (MinAccountDigits digits, a 20-character token)
	// encodes to at least this many.
	MinEncodedChars = 12
	// MaxDecodeDepth is how many layers of encoding are taken off (base64
	// of hex, a percent-escaped base64).
	MaxDecodeDepth = 2
	// MaxDecodedForms bounds the decoded strings one argument yields, all
	// layers together, so that an argument full of candidates costs a
	// bounded amount of work.
	MaxDecodedForms = 64
)

var (
	hexRunRe    = regexp.MustCompile(`[0-9A-Fa-f]{12,}`)
	base64RunRe = regexp.MustCompile(`[A-Za-z0-9+/_\-]{12,}={0,2}`)
	base32RunRe = regexp.MustCompile(`[A-Za-z2-7]{16,}={0,6}`)
	// labelsRe finds dotted names whose labels may spell encoded data
	// split to fit DNS (63 bytes a label): two labels or more before the
	// last two. A name has at most 127 labels, and MaxDecodedForms bounds
	// what their joins yield.
	labelsRe = regexp.MustCompile(`(?:[A-Za-z0-9\-_]{1,63}\.){3,}[A-Za-z0-9\-]{1,63}`)
)

// decodedForms returns what s may carry in encoded form: its
// percent-decoding, the decoding of each hex, base64 and base32 run, and
// of the labels of each dotted name joined (data split into DNS labels),
// taken off up to MaxDecodeDepth layers deep. Only decodings that read as
// text are kept; s itself is not among them.
func decodedForms(s string) []string {
	var out []string
	seen := map[string]bool{s: true}
	add := func(d string) bool {
		if len(out) >= MaxDecodedForms {
			return false
		}
		if d != "" && !seen[d] && readsAsText(d) {
			seen[d] = true
			out = append(out, d)
		}
		return true
	}
	layer := []string{s}
	for depth := 0; depth < MaxDecodeDepth && len(layer) > 0; depth++ {
		from := len(out)
		for _, x := range layer {
			if !decodeOnce(x, add) {
				return out
			}
		}
		layer = out[from:]
	}
	return out
}

// decodeOnce passes add every decoding of one layer of x; it stops, and
// returns false, when add does.
func decodeOnce(x string, add func(string) bool) bool {
	if strings.ContainsAny(x, "%+") {
		if d, err := url.QueryUnescape(x); err == nil && !add(d) {
			return false
		}
	}
	candidates := func(text string) bool {
		for _, m := range hexRunRe.FindAllString(text, -1) {
			if b, err := hex.DecodeString(m[:len(m)&^1]); err == nil && !add(string(b)) {
				return false
			}
		}
		for _, m := range base64RunRe.FindAllString(text, -1) {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
				if b, err := enc.DecodeString(m); err == nil {
					if !add(string(b)) {
						return false
					}
					break
				}
			}
		}
		for _, m := range base32RunRe.FindAllString(text, -1) {
			m = strings.ToUpper(strings.TrimRight(m, "="))
			if b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(m); err == nil && !add(string(b)) {
				return false
			}
		}
		return true
	}
	if !candidates(x) {
		return false
	}
	// Where the data ends and the attacker's own subdomains begin is not
	// known, so every run of leading labels is joined, longest first.
	for _, name := range labelsRe.FindAllString(x, -1) {
		labels := strings.Split(name, ".")
		for k := len(labels) - 2; k >= 2; k-- {
			joined := strings.Join(labels[:k], "")
			if len(joined) >= MinEncodedChars && !candidates(joined) {
				return false
			}
		}
	}
	return true
}

// readsAsText reports whether b, decoded, is text a value could be read
// from: valid UTF-8, nearly all of it printable. Random bytes that happen
// to decode are not.
func readsAsText(s string) bool {
	if len(s) < MinAccountDigits || !utf8.ValidString(s) {
		return false
	}
	bad := 0
	for _, r := range s {
		if !unicode.IsPrint(r) && !unicode.IsSpace(r) {
			bad++
		}
	}
	return bad*10 <= utf8.RuneCountInString(s)
}
