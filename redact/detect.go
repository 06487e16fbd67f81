package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// finding is a Finding with the priority that names a merged span.
type finding struct {
	Finding
	priority int
}

// find runs every rule where the prefilter saw one of its keywords, then
// the numeric scanner, and merges overlapping findings.
func (rd *Redactor) find(text []byte) []finding {
	var raw []finding
	add := func(r *rule, start, end int) {
		if start >= end || rd.allowed(text[start:end]) {
			return
		}
		raw = append(raw, finding{Finding{Kind: r.kind, Start: start, End: end}, r.priority})
	}
	type span struct{ start, end int }
	lastWindow := make([]span, len(rd.rules))
	rd.pre.find(text, func(h hit) {
		for _, ri := range rd.byWord[h.word] {
			r := rd.rules[ri]
			switch {
			case r.check == "pem":
				if s, e, ok := matchPEM(text, h.start); ok {
					add(r, s, e)
				}
			case r.check == "url":
				if s, e, ok := matchURLPassword(text, h.start); ok {
					add(r, s, e)
				}
			case r.check == "email":
				if s, e, ok := matchEmail(text, h.start); ok {
					add(r, s, e)
				}
			case r.check == "aws-pair":
				matchAWSPair(text, h.start, func(s, e int) { add(r, s, e) })
			case r.check == "cli":
				n := len(rd.pre.words[h.word])
				ws, we := lineWindow(text, h.start, n, r.back)
				r.matchCLI(text, h.start, n, ws, we, func(s, e int) { add(r, s, e) })
			case r.line:
				n := len(rd.pre.words[h.word])
				ws, we := lineWindow(text, h.start, n, r.back)
				ok := true
				switch r.check {
				case "assignment":
					ws, we, ok = assignmentWindow(text, h.start, n, ws, we, r.flag)
				case "element":
					ws, ok = elementWindow(text, h.start, n, ws, we)
				case "attribute":
					ws, ok = attributeWindow(text, h.start, n, ws, we)
				}
				if !ok || lastWindow[ri] == (span{ws, we}) {
					continue // no assignment here, or the same line already searched for this rule
				}
				lastWindow[ri] = span{ws, we}
				var matches [][]int
				if r.anchored {
					if m := r.re.FindSubmatchIndex(text[ws:we]); m != nil {
						matches = [][]int{m} // anchored: one match, and one try
					}
				} else {
					matches = r.re.FindAllSubmatchIndex(text[ws:we], -1)
				}
				for _, m := range matches {
					s, e := m[2*r.group], m[2*r.group+1]
					if s < 0 {
						continue
					}
					s, e = s+ws, e+ws
					if r.keyGroup > 0 && m[2*r.keyGroup] >= 0 {
						if s, e, ok = unwrapValue(text, s, e, m[2*r.keyGroup]+ws); !ok {
							continue
						}
					}
					if r.verify(text, s, e, m, ws) {
						add(r, s, e)
					}
				}
			default:
				s := h.start
				if s > 0 && isAlnum(text[s-1]) {
					continue // inside a longer word: "task-..." is not "sk-..."
				}
				win := text[s:min(len(text), s+MaxSecretBytes)]
				m := r.re.FindSubmatchIndex(win)
				if m == nil {
					continue
				}
				ms, me := m[2*r.group]+s, m[2*r.group+1]+s
				if r.group == 0 && me < len(text) && isAlnum(text[me]) {
					continue // a longer run than the token's alphabet and length allow
				}
				if r.verify(text, ms, me, m, s) {
					add(r, ms, me)
				}
			}
		}
	})
	if len(rd.numeric) > 0 {
		scanNumeric(text, func(kind string, s, e int) {
			if rd.numeric[kind] && !rd.allowedNumber(kind, text[s:e]) {
				raw = append(raw, finding{Finding{Kind: kind, Start: s, End: e}, 0})
			}
		})
	}
	return merge(raw)
}

// merge sorts findings and joins overlapping ones into their union, named
// after the highest-priority member: masking the union never leaves part of
// either secret showing.
func merge(raw []finding) []finding {
	if len(raw) < 2 {
		return raw
	}
	slices.SortFunc(raw, func(a, b finding) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return b.End - a.End
	})
	out := raw[:1]
	for _, f := range raw[1:] {
		last := &out[len(out)-1]
		if f.Start < last.End {
			if f.End > last.End {
				last.End = f.End
			}
			if f.priority > last.priority {
				last.Kind, last.priority = f.Kind, f.priority
			}
			continue
		}
		out = append(out, f)
	}
	return out
}

func (rd *Redactor) allowed(v []byte) bool {
	if len(rd.allowVal) == 0 && len(rd.allowRe) == 0 {
		return false
	}
	if rd.allowVal[string(v)] {
		return true
	}
	for _, re := range rd.allowRe {
		if re.Match(v) {
			return true
		}
	}
	return false
}

// allowedNumber is allowed for a numeric finding: a card number is also
// tried as its digits alone.
func (rd *Redactor) allowedNumber(kind string, v []byte) bool {
	if len(rd.allowVal) == 0 && len(rd.allowRe) == 0 {
		return false
	}
	return rd.allowed(v) || kind == "card-number" && rd.allowed(digitsOf(v))
}

// digitsOf is v without its separators: a card number as an allowlist
// lists it, whichever way the text spaces it.
func digitsOf(v []byte) []byte {
	d := make([]byte, 0, len(v))
	for _, b := range v {
		if isDigit(b) {
			d = append(d, b)
		}
	}
	return d
}

// lineWindow is the part of the keyword's line from back bytes before it
// to MaxContextBytes after it.
func lineWindow(text []byte, at, n, back int) (int, int) {
	lo := max(0, at-back)
	if i := bytes.LastIndexByte(text[lo:at], '\n'); i >= 0 {
		lo += i + 1
	}
	hi := min(len(text), at+n+MaxContextBytes)
	if i := bytes.IndexByte(text[at:hi], '\n'); i >= 0 {
		hi = at + i
	}
	return lo, hi
}

// nameBounds returns the bounds of the name around the keyword at
// text[at:at+n], within [ws, we), where in reports the bytes a name holds.
func nameBounds(text []byte, at, n, ws, we int, in func(byte) bool) (int, int) {
	ks := at
	for ks > ws && in(text[ks-1]) {
		ks--
	}
	ke := at + n
	for ke < we && in(text[ke]) {
		ke++
	}
	return ks, ke
}

// goTyped reports whether text starts with a Go type and an '=', as after
// the name in "var apiKey string = ...".
func goTyped(text []byte) bool {
	for _, t := range []string{"string", "[]byte"} {
		if rest, ok := bytes.CutPrefix(text, []byte(t)); ok {
			rest = bytes.TrimLeft(rest, " \t")
			return len(rest) > 0 && rest[0] == '='
		}
	}
	return false
}

func isNameByte(b byte) bool { return isAlnum(b) || b == '_' || b == '.' || b == '-' }

// assignmentWindow narrows a line window to the name holding the keyword
// and what follows it, and reports whether an assignment can start there:
// an operator (= : := =>) after the name, or for a flag rule a name that
// starts with '-' followed by a space. Most keyword hits in prose and code
// ("the token budget") stop here, before any regular expression runs.
func assignmentWindow(text []byte, at, n, ws, we int, flag bool) (int, int, bool) {
	ks, ke := nameBounds(text, at, n, ws, we, isNameByte)
	i := ke
	if i < we && (text[i] == '"' || text[i] == '\'') {
		i++
		if i < we && text[i] == ']' {
			i++ // os.environ["API_TOKEN"] = ...
		}
	}
	for i < we && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	if flag {
		if text[ks] != '-' || i == ke || i >= we {
			return 0, 0, false
		}
	} else if i >= we || text[i] != '=' && text[i] != ':' && !goTyped(text[i:we]) {
		return 0, 0, false
	}
	return max(ws, ks-1), we, true
}

// verify applies a rule's entropy gate and check to a match [s, e); m is
// the submatch index relative to base.
func (r *rule) verify(text []byte, s, e int, m []int, base int) bool {
	v := text[s:e]
	if isPlaceholder(v) {
		return false
	}
	if r.entropy > 0 && entropy(v) < r.entropy {
		return false
	}
	switch r.check {
	case "mixed":
		return hasDigitAndLetter(v[min(len(v), 3):])
	case "jwt":
		return validJWT(v)
	case "basic":
		return validBasic(v)
	case "assignment", "element", "attribute":
		key := ""
		if k := r.keyGroup; k > 0 && m[2*k] >= 0 {
			key = string(text[m[2*k]+base : m[2*k+1]+base])
		}
		return validAssignment(r.kind, key, v, text[e:])
	}
	return true
}

func isAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func allDigits(v []byte) bool {
	for _, b := range v {
		if !isDigit(b) {
			return false
		}
	}
	return len(v) > 0
}

// entropy is the Shannon entropy of v in bits per byte.
func entropy(v []byte) float64 {
	if len(v) == 0 {
		return 0
	}
	var counts [256]int
	for _, b := range v {
		counts[b]++
	}
	h, n := 0.0, float64(len(v))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

func hasDigitAndLetter(v []byte) bool {
	d, l := false, false
	for _, b := range v {
		switch {
		case isDigit(b):
			d = true
		case b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z':
			l = true
		}
	}
	return d && l
}

// placeholderParts are substrings that mark a value as an example, a
// template or a reference rather than a secret. Random tokens contain one
// by chance with a probability of about one in a million or less.
var placeholderParts = []string{
	"xxxx", "example", "your_", "your-", "yourapi", "yourtoken", "yoursecret", "yourkey", "yourpass",
	"placeholder", "changeme", "change_me", "change-me", "redacted", "dummy", "sample", "replace_",
	"replaceme", "insert_", "<", ">", "${", "{{", "}}", "****", "...", "abcdefgh", "1234567890", "0000000",
}

// placeholderValues are whole values that name a secret instead of being one.
var placeholderValues = map[string]bool{
	"password": true, "passwd": true, "secret": true, "token": true, "changeme": true,
	"none": true, "null": true, "nil": true, "true": true, "false": true, "undefined": true,
	"required": true, "optional": true, "string": true, "str": true, "hidden": true, "empty": true,
	"test": true, "xxx": true, "todo": true, "tbd": true, "n/a": true, "foo": true, "bar": true,
	"apikey": true, "api_key": true, "secret_key": true, "access_token": true, "mysecret": true,
	"mypassword": true, "supersecret": true, "notasecret": true, "default": true, "value": true,
}

func isPlaceholder(v []byte) bool {
	l := strings.ToLower(string(v))
	if placeholderValues[l] {
		return true
	}
	for _, p := range placeholderParts {
		if strings.Contains(l, p) {
			return true
		}
	}
	// A run of one character: "aaaaaaaa", "--------".
	run := 1
	for i := 1; i < len(v); i++ {
		if v[i] == v[i-1] {
			if run++; run >= 6 {
				return true
			}
		} else {
			run = 1
		}
	}
	return false
}

// codeWords are values that read as the start of an expression, not as a
// secret: "for _, dbPass := range passes".
var codeWords = map[string]bool{
	"range": true, "new": true, "await": true, "lambda": true, "function": true, "func": true,
	"yield": true, "typeof": true, "require": true, "import": true, "not": true, "self": true, "this": true,
	"async": true,
}

// notSecretKeys are parts of assignment names whose values are not secrets
// although the name says token or key: counts, names, types, public halves.
var notSecretKeys = []string{
	"public", "pub_", "pubkey", "primary", "foreign", "sort", "partition", "cache", "idempot",
	"lookup", "_name", "_id", "_type", "_url", "_uri", "_file", "_path", "_dir", "_len", "_count",
	"_size", "_ttl", "_expir", "_at", "_endpoint", "_header", "_field", "_prefix", "_format",
	"_version", "_ref", "_limit", "max_", "min_", "num_", "_env", "tokeniz", "_label", "keyring",
	"_algorithm", "_alg", "_arn", "_policy", "_mode", "_kind", "_usage", "_length", "_bytes", "_index",
	"_hint", "_placeholder", "_required", "_regex", "_pattern", "_reset", "_prompt", "_strength", "_rules",
	"_message", "_error", "_validat",
}

// validAssignment gates a value assigned to a secret-looking name: not a
// reference, an expression, a path or a word in code, and for the generic
// kind, something with a digit or long enough to be random.
func validAssignment(kind, key string, v, after []byte) bool {
	k := snakeCase(key)
	for _, p := range notSecretKeys {
		if strings.Contains(k, p) {
			return false
		}
	}
	switch v[0] {
	case '$', '%', '{', '(', '[', '~', '<', '&', '*', '!', '@', '#', '\\', '.', '=', '|', '?':
		return false // a reference, template, path, tag or code
	case '/':
		// A path, unless it reads as random base64 ("/tBBy...", 40 bytes).
		if len(v) < 24 || bytes.ContainsAny(v, ".-_") || entropy(v) < 4 {
			return false
		}
	}
	if bytes.ContainsAny(v, "()[]{}<>") || len(after) > 0 && after[0] == '(' || codeWords[string(v)] {
		return false // an expression or a call
	}
	if kind != "password" && (bytes.IndexByte(v, '*') >= 0 || bytes.IndexByte(v, '/') >= 0 && bytes.IndexByte(v, '.') >= 0) {
		return false // arithmetic or a path: tokens = 2*n, per_key = 1.0/max_id; tokens have no '*', nor '/' with '.'
	}
	if identLike(v) && (strings.HasPrefix(k, "self.") || strings.HasPrefix(k, "this.") || len(after) > 0 && after[0] == ',') {
		return false // a variable: self.passwd = password_mgr; self.user, self.password = user, password
	}
	if hexNumber(v) {
		return false // SIOCGLIFTOKEN = -0x3f879678
	}
	if len(after) > 0 && (after[0] == ' ' || after[0] == '\t') && identLike(v) {
		// A word followed by more words or an operator is prose or an
		// expression: "pwd: expected bytes", "userid = passwd = acct = ''".
		rest := bytes.TrimLeft(after, " \t")
		if len(rest) > 0 && (isAlnum(rest[0]) || bytes.IndexByte([]byte("=+-*/%|&?<>."), rest[0]) >= 0) {
			return false
		}
	}
	if strings.HasPrefix(string(v), "os.") || strings.HasPrefix(string(v), "process.") || strings.HasPrefix(string(v), "env.") {
		return false
	}
	digits, letters, upper, lowerCase, other := 0, 0, 0, 0, 0
	for _, b := range v {
		switch {
		case isDigit(b):
			digits++
		case b >= 'a' && b <= 'z':
			letters++
			lowerCase++
		case b >= 'A' && b <= 'Z':
			letters++
			upper++
		default:
			other++
		}
	}
	if digits == len(v) && (kind != "password" || len(v) < 6) {
		return false // a number: a count, a port, a limit
	}
	if dottedIdent(v) {
		return false // config.password, self.token
	}
	if kind == "password" {
		if digits == 0 && other == 0 {
			// Letters only: a word in code (passwordField, user_pass) is
			// not a password; a plain word may be.
			l := strings.ToLower(string(v))
			if upper > 0 && lowerCase > 0 && !(upper == 1 && v[0] >= 'A' && v[0] <= 'Z') ||
				strings.Contains(l, "pass") || strings.Contains(l, "pwd") {
				return false
			}
		}
		return true
	}
	if digits == 0 && (len(v) < 24 || entropy(v) < 4) {
		return false // words and identifiers rather than random text
	}
	return true
}

// snakeCase lower-cases a name and puts '_' where camel case starts a
// word, so that notSecretKeys reads passwordField as password_field.
func snakeCase(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'A' && c <= 'Z' {
			if i > 0 && (name[i-1] >= 'a' && name[i-1] <= 'z' || isDigit(name[i-1])) {
				b.WriteByte('_')
			}
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// hexNumber reports whether v is a hexadecimal literal, maybe negative.
func hexNumber(v []byte) bool {
	v = bytes.TrimPrefix(v, []byte("-"))
	if len(v) < 3 || v[0] != '0' || v[1] != 'x' && v[1] != 'X' {
		return false
	}
	for _, b := range v[2:] {
		if !isDigit(b) && !(b|0x20 >= 'a' && b|0x20 <= 'f') {
			return false
		}
	}
	return true
}

// identLike reports whether v is letters and underscores only: a word or
// a name in code.
func identLike(v []byte) bool {
	for _, b := range v {
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '_') {
			return false
		}
	}
	return true
}

func dottedIdent(v []byte) bool {
	parts := bytes.Split(v, []byte("."))
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if len(p) == 0 || isDigit(p[0]) {
			return false
		}
		for _, b := range p {
			if !(isAlnum(b) || b == '_') {
				return false
			}
		}
	}
	return true
}

// matchPEM matches a private-key block at "-----BEGIN ": PEM, OpenSSH,
// PGP, and the same with literal "\n" inside a JSON string. Public keys and
// certificates have other labels and never match.
func matchPEM(text []byte, at int) (int, int, bool) {
	const begin = "-----BEGIN "
	if !bytes.HasPrefix(text[at:], []byte(begin)) {
		return 0, 0, false
	}
	rest := text[at+len(begin):]
	end := bytes.Index(rest[:min(len(rest), 64)], []byte("-----"))
	if end < 0 {
		return 0, 0, false
	}
	label := string(rest[:end])
	if !strings.HasSuffix(label, "PRIVATE KEY") && !strings.HasSuffix(label, "PRIVATE KEY BLOCK") {
		return 0, 0, false
	}
	for _, c := range label {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' ') {
			return 0, 0, false
		}
	}
	bodyStart := at + len(begin) + end + 5
	limit := min(len(text), at+MaxSecretBytes)
	if bodyStart >= limit {
		return 0, 0, false
	}
	body := text[bodyStart:limit]
	stop := len(body)
	if i := bytes.Index(body, []byte("-----END ")); i >= 0 {
		stop = i
	}
	b64 := 0
	for _, c := range body[:stop] {
		if isAlnum(c) || c == '+' || c == '/' {
			b64++
		}
	}
	if b64 < 64 {
		return 0, 0, false // "-----BEGIN PRIVATE KEY-----\n...\n" in documentation
	}
	if stop < len(body) {
		tail := body[stop+len("-----END "):]
		if j := bytes.Index(tail[:min(len(tail), 64)], []byte("-----")); j >= 0 {
			return at, bodyStart + stop + len("-----END ") + j + 5, true
		}
	}
	// No end line within reach: mask the run of key text from the header.
	i := 0
	for i < len(body) && (isAlnum(body[i]) || bytes.IndexByte([]byte("+/=\\ \t\r\n:,-"), body[i]) >= 0) {
		i++
	}
	return at, bodyStart + i, true
}

// matchURLPassword finds the password of "scheme://user:password@host" at
// "://" and returns its span: the user and host stay readable.
func matchURLPassword(text []byte, at int) (int, int, bool) {
	// The scheme: letters, digits, + . - before "://", starting with a letter.
	s := at
	for s > 0 && at-s < 32 && (isAlnum(text[s-1]) || text[s-1] == '+' || text[s-1] == '.' || text[s-1] == '-') {
		s--
	}
	if at-s < 2 || !(text[s] >= 'a' && text[s] <= 'z' || text[s] >= 'A' && text[s] <= 'Z') {
		return 0, 0, false
	}
	// The authority runs to the first / ? # quote or space; the userinfo
	// ends at its last '@'.
	a := at + 3
	e := a
	for e < len(text) && e-a < 512 {
		c := text[e]
		if c <= ' ' || c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`' || c == '\\' {
			break
		}
		e++
	}
	auth := text[a:e]
	atSign := bytes.LastIndexByte(auth, '@')
	if atSign <= 0 || atSign == len(auth)-1 {
		return 0, 0, false
	}
	colon := bytes.IndexByte(auth[:atSign], ':')
	if colon < 0 || colon == atSign-1 {
		return 0, 0, false
	}
	pw := auth[colon+1 : atSign]
	if len(pw) <= 5 && allDigits(pw) {
		return 0, 0, false // host:port@, as in URL-parser tests
	}
	if pw[0] == '$' || isPlaceholder(pw) && !placeholderValues[strings.ToLower(string(pw))] {
		return 0, 0, false // ${DB_PASSWORD}, <password>, ****
	}
	return a + colon + 1, a + atSign, true
}

// fileExtensions end names that look like domains but are files:
// icon@2x.png, logo@3x.svg.
var fileExtensions = map[string]bool{
	"png": true, "jpg": true, "jpeg": true, "gif": true, "svg": true, "webp": true, "ico": true,
	"js": true, "ts": true, "css": true, "html": true, "md": true, "txt": true, "py": true, "go": true,
	"json": true, "yaml": true, "yml": true, "lock": true, "zip": true, "gz": true, "tgz": true,
}

// matchEmail finds an address around '@'. Documentation domains
// (example.com, .test, .invalid, localhost), git@host logins and Google
// service accounts (name@project.iam.gserviceaccount.com: a machine's
// identity, which its credential file names beside the key that is masked)
// are not personal data.
func matchEmail(text []byte, at int) (int, int, bool) {
	s := at
	for s > 0 && at-s <= 64 && (isAlnum(text[s-1]) || bytes.IndexByte([]byte("._%+-"), text[s-1]) >= 0) {
		s--
	}
	if s == at || at-s > 64 || text[s] == '.' {
		return 0, 0, false
	}
	if s > 0 && (text[s-1] == ':' || text[s-1] == '/') {
		return 0, 0, false // a URL's userinfo, handled as url-credential
	}
	e := at + 1
	for e < len(text) && e-at <= 255 && (isAlnum(text[e]) || text[e] == '.' || text[e] == '-') {
		e++
	}
	for e > at+1 && (text[e-1] == '.' || text[e-1] == '-') {
		e--
	}
	domain := strings.ToLower(string(text[at+1 : e]))
	dot := strings.LastIndexByte(domain, '.')
	if dot <= 0 {
		return 0, 0, false
	}
	tld := domain[dot+1:]
	if len(tld) < 2 || len(tld) > 24 || fileExtensions[tld] {
		return 0, 0, false
	}
	for _, c := range tld {
		if c < 'a' || c > 'z' {
			return 0, 0, false
		}
	}
	switch {
	case tld == "test", tld == "invalid", tld == "example", tld == "localhost", tld == "local",
		domain == "example.com", domain == "example.org", domain == "example.net",
		strings.HasSuffix(domain, ".example.com"), string(text[s:at]) == "git",
		strings.HasSuffix(domain, ".gserviceaccount.com"):
		return 0, 0, false
	}
	return s, e, true
}

// validJWT checks that the first segment decodes to a JSON object with a
// JWT header field.
func validJWT(v []byte) bool {
	head, _, _ := bytes.Cut(v, []byte("."))
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(string(head), "="))
	if err != nil {
		return false
	}
	var h map[string]json.RawMessage
	if json.Unmarshal(raw, &h) != nil {
		return false
	}
	_, alg := h["alg"]
	_, typ := h["typ"]
	return alg || typ
}

// validBasic checks that a Basic credential decodes to "user:password"
// text; "basic authentication" in prose does not decode.
func validBasic(v []byte) bool {
	raw, err := base64.StdEncoding.DecodeString(string(v))
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(string(v), "="))
		if err != nil {
			return false
		}
	}
	if !utf8.Valid(raw) || len(raw) < 3 {
		return false
	}
	for _, c := range string(raw) {
		if c < ' ' || c == 0x7f {
			return false
		}
	}
	user, pw, ok := strings.Cut(string(raw), ":")
	return ok && pw != "" && !isPlaceholder([]byte(pw)) && !(user == "" && len(pw) < 8)
}
