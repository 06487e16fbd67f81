package untrusted

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Provenance limits. A zero ProvenanceOptions field takes its default.
const (
	// DefaultMaxValues is how many values from untrusted content one
	// session remembers; the oldest are forgotten first.
	DefaultMaxValues = 4096
	// DefaultMaxUserValues is how many values from user input one session
	// remembers.
	DefaultMaxUserValues = 4096
	// MaxValueBytes is the longest value remembered; longer ones are cut.
	MaxValueBytes = 512
	// MaxObserveBytes is how much of one text Observe reads.
	MaxObserveBytes = 1 << 20
	// MaxArgsBytes bounds the JSON arguments Check reads.
	MaxArgsBytes = 1 << 20
	// MaxArgsDepth bounds the nesting of the JSON arguments Check walks.
	MaxArgsDepth = 32
)

// SourceUser is the source of the user's own input. Every other source
// (tool:NAME, web, file:PATH, ...) is untrusted.
const SourceUser = "user"

// Risk levels, as the policy names them.
const (
	RiskLow    = "low"
	RiskMedium = "medium"
	RiskHigh   = "high"
)

// SensitiveTokens are the tokens that make a medium- or high-risk call ask
// when the user's goal never mentions them. Each matches a whole word, a
// whole argv element (or its base name) or a whole path component, never
// a substring: "git branch" holds no "nc", "tokenizer" no "token".
var SensitiveTokens = []string{
	"password", "secret", "token", "api_key", ".env", "id_rsa", ".ssh", "rm -rf",
	"sudo", "curl", "wget", "nc", "/etc/passwd", "169.254.169.254",
}

// destinationFields are the argument names whose values say where a call
// acts or sends: only these count, so that a search query or a message
// body that merely mentions an address is data, not a destination. A name
// matches case-insensitively, as the whole key or its last word after _ or
// -, at any depth; array elements take their parent's key.
var destinationFields = map[string]bool{
	"url": true, "uri": true, "href": true, "link": true, "endpoint": true, "webhook": true, "callback": true,
	"host": true, "hostname": true, "domain": true, "server": true, "address": true, "addr": true, "ip": true,
	"command": true, "cmd": true, "argv": true, "args": true, "script": true, "shell": true, "program": true,
	"path": true, "paths": true, "file": true, "filename": true, "filepath": true, "dir": true, "directory": true,
	"target": true, "dest": true, "destination": true, "source": true, "src": true, "output": true,
	"to": true, "recipient": true, "recipients": true, "cc": true, "bcc": true, "email": true, "remote": true,
	"repo": true, "repository": true, "redirect": true, "origin": true, "upstream": true, "channel": true,
	"account": true, "iban": true, "payee": true, "beneficiary": true, "wallet": true, "phone": true,
}

// ProvenanceOptions tune a Provenance. Nil means defaults.
type ProvenanceOptions struct {
	MaxValues     int
	MaxUserValues int
}

// Provenance remembers, for one session, which values arrived through
// untrusted content and which through the user. It is safe for concurrent
// use. The zero value is not usable; call NewProvenance.
type Provenance struct {
	mu        sync.Mutex
	max, maxU int
	tainted   map[string]string // value → the source it first came from
	order     []string          // tainted values, oldest first
	user      map[string]bool
	userOrder []string
	// truncated: an untrusted value was forgotten past max (or the store
	// dropped some, MarkTruncated), so what the session read is no longer
	// all known. It is never cleared: flooding the session with junk
	// must not make a value it read look like the user's.
	truncated bool
}

// NewProvenance returns an empty tracker.
func NewProvenance(opts *ProvenanceOptions) *Provenance {
	p := &Provenance{max: DefaultMaxValues, maxU: DefaultMaxUserValues, tainted: map[string]string{}, user: map[string]bool{}}
	if opts != nil && opts.MaxValues > 0 {
		p.max = opts.MaxValues
	}
	if opts != nil && opts.MaxUserValues > 0 {
		p.maxU = opts.MaxUserValues
	}
	return p
}

var (
	urlRe   = regexp.MustCompile(`(?i)\b(?:https?|ftp|wss?|file|ssh|git)://[^\s"'<>()\[\]{}\x60\\]+`)
	emailRe = regexp.MustCompile(`[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9.\-]{1,253}\.[A-Za-z]{2,24}`)
	ipRe    = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b`)
	hostRe  = regexp.MustCompile(`(?i)\b(?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.)+(?:com|net|org|io|dev|app|ai|co|me|info|biz|xyz|sh|site|online|top|ru|cn|de|uk|us|fr|jp|br|in|tk|ml|ga|cf|gq|pw|cc|ly|to|gg|link|cloud|tech|store|live|click)\b`)
	pathRe  = regexp.MustCompile(`(?:^|[\s"'=:(,])((?:/|~/)[A-Za-z0-9._\-/~]{1,511}|(?:[A-Za-z0-9._\-]+/)*\.\./[A-Za-z0-9._\-/]{0,511})`)
	tokenRe = regexp.MustCompile(`[A-Za-z0-9_\-]{20,}`)
	// ipv6Re finds IPv6 literals, bracketed (in URLs) or bare; net.ParseIP
	// decides.
	ipv6Re = regexp.MustCompile(`\[[0-9A-Fa-f:.]{2,45}\]|\b(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}\b`)
	// digitsRe finds digit runs that look like account or card numbers:
	// MinAccountDigits or more digits, spaces or dashes between them
	// allowed.
	digitsRe = regexp.MustCompile(`\b\d(?:[ -]?\d){5,33}\b`)
	// ibanRe finds IBAN candidates, in print form (groups of four) or not;
	// validIBAN decides.
	ibanRe = regexp.MustCompile(`\b[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]){11,30}\b`)
	// defanged are the ways a host or URL is written so that it is not a
	// link ("evil[.]com", "hxxps://"): each is read as what it stands for.
	defanged = strings.NewReplacer("[.]", ".", "(.)", ".", "{.}", ".", "[dot]", ".", "(dot)", ".",
		"[:]", ":", "[://]", "://", "hxxp", "http", "hXXp", "http", "HXXP", "HTTP")
)

// MinAccountDigits is the fewest digits a run needs to be tracked as an
// account-like number.
const MinAccountDigits = 6

// Values extracts the values Provenance tracks from text (at most
// MaxObserveBytes of it): URLs, their
// hosts, bare host names, IP addresses, email addresses, absolute,
// home-relative and parent-relative paths (a workspace-relative path is an
// ordinary thing for a tool to list and is not tracked), and long tokens
// mixing letters and digits.
func Values(text string) []string {
	if len(text) > MaxObserveBytes {
		text = text[:MaxObserveBytes]
	}
	out := values(text)
	// A defanged host or URL is still that host or URL.
	if re := defanged.Replace(text); re != text {
		out = append(out, values(re)...)
	}
	return out
}

// values is Values of text as written.
func values(text string) []string {
	var out []string
	addV := func(v string) {
		v = strings.TrimRight(v, ".,;:!?")
		if v == "" {
			return
		}
		if len(v) > MaxValueBytes {
			v = v[:MaxValueBytes]
		}
		out = append(out, v)
	}
	for _, u := range urlRe.FindAllString(text, -1) {
		u = strings.TrimRight(u, ".,;:!?")
		addV(u)
		if pu, err := url.Parse(u); err == nil && pu.Hostname() != "" {
			addV(strings.ToLower(pu.Hostname()))
		}
	}
	for _, e := range emailRe.FindAllString(text, -1) {
		addV(strings.ToLower(e))
	}
	for _, ip := range ipRe.FindAllString(text, -1) {
		if net.ParseIP(ip) != nil {
			addV(ip)
		}
	}
	for _, h := range hostRe.FindAllString(text, -1) {
		addV(strings.ToLower(h))
	}
	for _, m := range pathRe.FindAllStringSubmatch(text, -1) {
		if p := m[1]; p != "/" && !strings.HasPrefix(p, "//") {
			addV(path.Clean(p))
		}
	}
	for _, t := range tokenRe.FindAllString(text, -1) {
		if hasDigitLetter(t) {
			addV(t)
		}
	}
	for _, m := range ipv6Re.FindAllString(text, -1) {
		if ip := net.ParseIP(strings.Trim(m, "[]")); ip != nil && strings.Contains(m, ":") {
			addV(ip.String()) // one spelling of each address
		}
	}
	// An IBAN is one value: its digit groups are not account numbers of
	// their own, so they are blanked out before digit runs are looked for.
	digits := []byte(text)
	for _, m := range ibanRe.FindAllStringIndex(text, -1) {
		if iban := longestIBAN(strings.ToUpper(strings.ReplaceAll(text[m[0]:m[1]], " ", ""))); iban != "" {
			addV(iban)
			for i := m[0]; i < m[1]; i++ {
				digits[i] = ' '
			}
		}
	}
	for _, m := range digitsRe.FindAllString(string(digits), -1) {
		addV(strings.NewReplacer(" ", "", "-", "").Replace(m))
	}
	for _, a := range amounts(text) {
		addV(a)
	}
	return out
}

// longestIBAN returns the longest valid IBAN that s starts with, or "":
// the pattern runs on into the words after an IBAN in print form ("GB82
// WEST ... 32 the 10 pounds"), so the candidate is cut back until its
// check digits agree.
func longestIBAN(s string) string {
	for n := min(len(s), 34); n >= 15; n-- {
		if validIBAN(s[:n]) {
			return s[:n]
		}
	}
	return ""
}

// validIBAN checks an IBAN's length (15 to 34) and its ISO 13616 check
// digits (mod 97 of the rearranged number is 1), so that a run of
// letters and digits is not taken for one by chance.
func validIBAN(s string) bool {
	if len(s) < 15 || len(s) > 34 {
		return false
	}
	rem := 0
	for _, c := range s[4:] + s[:4] {
		switch {
		case c >= '0' && c <= '9':
			rem = (rem*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			rem = (rem*100 + int(c-'A'+10)) % 97
		default:
			return false
		}
	}
	return rem == 1
}

func hasDigitLetter(s string) bool {
	d, l := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		d = d || c >= '0' && c <= '9'
		l = l || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	return d && l
}

// Observe records the values in text as coming from source: SourceUser
// for the user's own input, anything else for untrusted content. A value
// the user has given is never counted as untrusted, whenever it was seen.
func (p *Provenance) Observe(source, text string) {
	for _, v := range Values(text) {
		p.Add(source, v)
	}
}

// Add records one value (as Values extracts it) as coming from source, as
// Observe does.
func (p *Provenance) Add(source, v string) {
	if len(v) > MaxValueBytes {
		v = v[:MaxValueBytes]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if source == SourceUser {
		if !p.user[v] {
			p.user[v] = true
			p.userOrder = append(p.userOrder, v)
			if len(p.userOrder) > p.maxU {
				delete(p.user, p.userOrder[0])
				p.userOrder = p.userOrder[1:]
			}
		}
		return
	}
	if _, ok := p.tainted[v]; !ok {
		p.tainted[v] = source
		p.order = append(p.order, v)
		if len(p.order) > p.max {
			delete(p.tainted, p.order[0])
			p.order = p.order[1:]
			p.truncated = true
		}
	}
}

// MarkTruncated records that values which reached the session were
// forgotten elsewhere (the store dropped observations past its bound):
// from now on every value the user did not give counts as untrusted.
func (p *Provenance) MarkTruncated() {
	p.mu.Lock()
	p.truncated = true
	p.mu.Unlock()
}

// Truncated reports whether the session forgot values it read (see
// MarkTruncated).
func (p *Provenance) Truncated() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.truncated
}

// Has reports whether the value v (as Values extracts it) is remembered
// as coming from the user (source SourceUser) or, for any other source,
// from untrusted content.
func (p *Provenance) Has(source, v string) bool {
	if len(v) > MaxValueBytes {
		v = v[:MaxValueBytes]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if source == SourceUser {
		return p.user[v]
	}
	_, ok := p.tainted[v]
	return ok
}

// Len reports how many untrusted and user values are remembered.
func (p *Provenance) Len() (untrusted, user int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tainted), len(p.user)
}

// field is one string in a call's arguments and the key it sits under.
type field struct{ key, value string }

// Check says whether a call should ask a person first. A low-risk call
// never does. A medium- or high-risk call asks when a destination field of
// its arguments (see destinationFields) carries a value that reached the
// session only through untrusted content, or, when goal is not empty, a
// SensitiveToken that the goal does not mention. args is the call's JSON
// arguments; malformed or oversized arguments ask too, with the reason.
func (p *Provenance) Check(risk string, args json.RawMessage, goal string) (ask bool, reason string) {
	if risk != RiskMedium && risk != RiskHigh {
		return false, ""
	}
	fields, err := argFields(args)
	if err != nil {
		return true, err.Error()
	}
	return p.check(fields, goal)
}

// CheckArgv is Check for a command given as argv: every element is a
// destination.
func (p *Provenance) CheckArgv(risk string, argv []string, goal string) (ask bool, reason string) {
	if risk != RiskMedium && risk != RiskHigh {
		return false, ""
	}
	// One field, so that "rm" "-rf" are seen side by side.
	return p.check([]field{{"argv", strings.Join(argv, " ")}}, goal)
}

func (p *Provenance) check(fields []field, goal string) (bool, string) {
	var dest []field
	for _, f := range fields {
		if isDestination(f.key) {
			dest = append(dest, f)
		}
	}
	p.mu.Lock()
	for _, f := range dest {
		if v, src, ok := p.untrustedIn(f.value); ok {
			p.mu.Unlock()
			if src == "" {
				return true, fmt.Sprintf("argument %q carries %q, which the user did not give, and this session read more untrusted values than it keeps (%d), so it may have come from one", f.key, truncate(v, 80), p.max)
			}
			return true, fmt.Sprintf("argument %q carries %q, which reached this session only through untrusted content (%s), not from the user", f.key, truncate(v, 80), src)
		}
	}
	for _, f := range fields {
		if !isAmountField(f.key) {
			continue
		}
		if c, ok := canonAmount(f.value); ok {
			v := amountPrefix + c
			if src, ok := p.tainted[v]; ok && !p.user[v] {
				p.mu.Unlock()
				return true, fmt.Sprintf("argument %q is the amount %s, which reached this session only through untrusted content (%s), not from the user", f.key, c, src)
			}
		}
	}
	p.mu.Unlock()
	if goal == "" {
		return false, ""
	}
	goalWords := words(goal)
	for _, f := range dest {
		if t := sensitiveIn(f.value); t != "" && !mentions(goalWords, t) {
			return true, fmt.Sprintf("argument %q carries %q, which the user's goal does not mention", f.key, t)
		}
	}
	return false, ""
}

// untrustedIn finds a value in s, as written or in a decoded form (see
// decodedForms), that the user did not give and that reached the session
// through untrusted content, with its source; or, in a truncated
// session, any value the user did not give, with no source. p.mu is
// held.
func (p *Provenance) untrustedIn(s string) (v, source string, found bool) {
	check := func(vs []string) bool {
		for _, x := range vs {
			if p.user[x] {
				continue
			}
			if src, ok := p.tainted[x]; ok {
				v, source = x, src
				return true
			}
			if p.truncated {
				v = x
				return true
			}
		}
		return false
	}
	if check(Values(s)) {
		return v, source, true
	}
	for _, d := range decodedForms(s) {
		if check(values(d)) {
			return v, source, true
		}
	}
	return "", "", false
}

// Destinations lists where a call's arguments (JSON) send or act, as the
// taint of a session judges them: in each destination field (see
// destinationFields), the hosts of its URLs, and its host names, IP
// addresses, email addresses, account numbers, IBANs and long tokens, as
// Values reads them; paths are where a call acts in the workspace, not
// where it sends, and are left out. A destination field in which Values
// finds nothing is a name ("ops-team"), trimmed and in lower case: one
// destination when the call has no other, else the label of one.
func Destinations(args json.RawMessage) ([]string, error) {
	fields, err := argFields(args)
	if err != nil {
		return nil, err
	}
	var out, names []string
	for _, f := range fields {
		if !isDestination(f.key) || strings.TrimSpace(f.value) == "" {
			continue
		}
		vs := Values(f.value)
		if len(vs) == 0 {
			v := strings.ToLower(strings.TrimSpace(f.value))
			names = append(names, v[:min(len(v), MaxValueBytes)])
			continue
		}
		for _, v := range vs {
			switch {
			case strings.HasPrefix(v, amountPrefix), strings.HasPrefix(v, "/"), strings.HasPrefix(v, "~"), strings.Contains(v, "../"):
			case strings.Contains(v, "://"):
				if u, err := url.Parse(v); err == nil && u.Hostname() != "" {
					out = append(out, CanonicalHost(u.Hostname()))
				}
			default:
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 {
		// Only names: they are where the call sends. Beside an address,
		// an account or a host, a name (a payee's, a channel's title) is
		// a label of it.
		out = names
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// CanonicalHost writes a host as Values records it: lower case, no
// trailing dot, an IPv6 address in its one short form.
func CanonicalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}

func isDestination(key string) bool { return fieldIn(destinationFields, key) }

// isAmountField reports whether any word of key names an amount
// ("amount", "amount_eur", "total_due").
func isAmountField(key string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(key), func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if amountFields[w] {
			return true
		}
	}
	return false
}

// fieldIn reports whether key names a field of set: case-insensitively,
// as the whole key or its last word after _, - or .
func fieldIn(set map[string]bool, key string) bool {
	k := strings.ToLower(key)
	if set[k] {
		return true
	}
	if i := strings.LastIndexAny(k, "_-."); i >= 0 && set[k[i+1:]] {
		return true
	}
	return false
}

// argFields walks JSON arguments and lists every string (and number, as
// text) with its key.
func argFields(args json.RawMessage) ([]field, error) {
	if len(args) > MaxArgsBytes {
		return nil, errorf(CodeInvalidArgs, "Keep call arguments within MaxArgsBytes", "the arguments are %d bytes, over %d", len(args), MaxArgsBytes)
	}
	if len(args) == 0 {
		return nil, nil
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, errorf(CodeInvalidArgs, "Send the arguments as one JSON value", "the arguments are not JSON: %v", err)
	}
	var out []field
	var walk func(key string, v any, depth int) error
	walk = func(key string, v any, depth int) error {
		if depth > MaxArgsDepth {
			return errorf(CodeInvalidArgs, "Nest arguments at most MaxArgsDepth deep", "the arguments nest deeper than %d", MaxArgsDepth)
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if err := walk(k, e, depth+1); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range x {
				if err := walk(key, e, depth+1); err != nil {
					return err
				}
			}
		case string:
			out = append(out, field{key, x})
		case json.Number:
			out = append(out, field{key, x.String()})
		}
		return nil
	}
	if err := walk("", v, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// words splits text into lower-case words: runs of letters, digits and
// _ . - / (so ".env", "id_rsa", "169.254.169.254" and "/etc/passwd" stay
// whole), with surrounding dots and dashes kept once trimmed of quotes.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' || r == '/' || r == '~' || r > 0x7f)
	})
}

// sensitiveIn returns the first SensitiveToken that value holds as a whole
// word, argv element, base name or path component, or "".
func sensitiveIn(value string) string {
	ws := words(value)
	for i, w := range ws {
		base := path.Base(w)
		comps := strings.Split(w, "/")
		for _, t := range SensitiveTokens {
			switch t {
			case "rm -rf":
				if base == "rm" && i+1 < len(ws) && isRecursiveForce(ws[i+1:]) {
					return t
				}
			case "/etc/passwd":
				if strings.HasSuffix(path.Clean(w), "/etc/passwd") {
					return t
				}
			case "169.254.169.254":
				if w == t || strings.HasPrefix(w, t+"/") || strings.Contains(w, "//"+t) {
					return t
				}
			default:
				if w == t || base == t || slices.Contains(comps, t) || strings.TrimLeft(w, "-") == t ||
					strings.HasPrefix(strings.TrimLeft(w, "-"), t+"=") {
					return t
				}
			}
		}
	}
	return ""
}

// isRecursiveForce reports whether rm's flags include both r (or R) and f.
func isRecursiveForce(rest []string) bool {
	r, f := false, false
	for _, a := range rest {
		if !strings.HasPrefix(a, "-") {
			break
		}
		if a == "--recursive" {
			r = true
		} else if a == "--force" {
			f = true
		} else if !strings.HasPrefix(a, "--") {
			r = r || strings.ContainsAny(a, "rR")
			f = f || strings.Contains(a, "f")
		}
	}
	return r && f
}

// mentions reports whether the goal's words name the token: the token
// itself, or without its leading dot or slash (".ssh" as "ssh"), or each
// word of a two-word token ("rm -rf" as "rm").
func mentions(goalWords []string, t string) bool {
	forms := []string{t, strings.TrimLeft(t, "./"), path.Base(t)}
	if a, _, ok := strings.Cut(t, " "); ok {
		forms = append(forms, a)
	}
	if t == "api_key" {
		forms = append(forms, "api-key", "apikey", "key")
	}
	for _, w := range goalWords {
		w = strings.Trim(w, ".-")
		for _, f := range forms {
			if w == strings.Trim(f, ".-") {
				return true
			}
		}
	}
	return false
}
