package redact

import "bytes"

// Markup rules find a secret that a name in XML or a config file's
// attributes holds: <password>x</password> (check: element), and
// <add key="Password" value="x"/> or <entry key="db.password">x</entry>
// (check: attribute). As with assignments, a few byte comparisons around
// the keyword rule out most lines before any regular expression runs.

func isXMLNameByte(b byte) bool { return isNameByte(b) || b == ':' }

// elementWindow reports where a check: element rule's pattern starts: at
// the '<' of a start tag whose name holds the keyword.
func elementWindow(text []byte, at, n, ws, we int) (int, bool) {
	ks, ke := nameBounds(text, at, n, ws, we, isXMLNameByte)
	if ks == ws || text[ks-1] != '<' || ke >= we || text[ke] != '>' && text[ke] != ' ' && text[ke] != '\t' {
		return 0, false
	}
	return ks - 1, true
}

// attributeWindow reports where a check: attribute rule's pattern starts:
// at the name of the attribute whose quoted value holds the keyword
// (key="Password").
func attributeWindow(text []byte, at, n, ws, we int) (int, bool) {
	ks, ke := nameBounds(text, at, n, ws, we, isXMLNameByte)
	if ks == ws || ke >= we || text[ks-1] != '"' && text[ks-1] != '\'' || text[ke] != text[ks-1] {
		return 0, false
	}
	i := ks - 1
	for i > ws && (text[i-1] == ' ' || text[i-1] == '\t') {
		i--
	}
	if i == ws || text[i-1] != '=' {
		return 0, false
	}
	i--
	for i > ws && (text[i-1] == ' ' || text[i-1] == '\t') {
		i--
	}
	as := i
	for as > ws && isXMLNameByte(text[as-1]) {
		as--
	}
	if as == i {
		return 0, false
	}
	return as, true
}

// unwrapValue narrows a matched value [s, e) to what it holds: the inside
// of its quotes, and of its braces in an ODBC connection string
// (Pwd={a;b}); in a URL query (?user=u&password=x&ssl=true) it ends at the
// next '&'. keyStart is where the name holding the keyword starts. A
// quoted value with white space in it is a message or a label, not a
// secret ("Enter your password"), and is refused, except after a command
// line's flag (--password="two words").
func unwrapValue(text []byte, s, e, keyStart int) (int, int, bool) {
	if e-s >= 2 {
		switch q := text[s]; {
		case (q == '"' || q == '\'' || q == '`') && text[e-1] == q:
			s, e = s+1, e-1
			flag := text[keyStart] == '-' || keyStart > 0 && text[keyStart-1] == '-'
			if !flag && bytes.ContainsAny(text[s:e], " \t") {
				return 0, 0, false
			}
			return s, e, true
		case q == '{' && text[e-1] == '}' && keyStart > 0 && text[keyStart-1] == ';':
			return s + 1, e - 1, true
		}
	}
	if keyStart > 0 && (text[keyStart-1] == '?' || text[keyStart-1] == '&') {
		if i := bytes.IndexByte(text[s:e], '&'); i >= 0 {
			e = s + i
		}
	}
	return s, e, e > s
}

// AWS secret access keys have no prefix of their own. Next to an access
// key id (AKIA..., ASIA...) a 40-character run of the base64 alphabet with
// upper case, lower case and digits is read as its secret, even in prose
// or a CSV row with no label: check: aws-pair. The run is searched from
// awsPairBack bytes before the key id on its own line to awsPairReach bytes
// after its start, across lines; the rule's open pattern makes Stream hold
// back that much text after a key id, and must agree with awsPairReach.
const (
	awsPairBack  = MaxContextBytes
	awsPairReach = MaxContextBytes
	awsKeyIDLen  = 20
	awsSecretLen = 40
)

func isAWSKeyIDByte(b byte) bool { return b >= 'A' && b <= 'Z' || b >= '2' && b <= '7' }

func isB64Byte(b byte) bool { return isAlnum(b) || b == '+' || b == '/' }

// matchAWSPair calls add for each secret access key near the key id at
// text[at:].
func matchAWSPair(text []byte, at int, add func(s, e int)) {
	if at > 0 && isAlnum(text[at-1]) || at+awsKeyIDLen > len(text) {
		return
	}
	id := text[at : at+awsKeyIDLen]
	switch string(id[:4]) {
	case "AKIA", "ASIA", "ABIA", "ACCA":
	default:
		if string(id[:3]) != "A3T" || !isAlnum(id[3]) {
			return
		}
	}
	for _, b := range id[4:] {
		if !isAWSKeyIDByte(b) {
			return
		}
	}
	if at+awsKeyIDLen < len(text) && isAlnum(text[at+awsKeyIDLen]) {
		return
	}
	lo, _ := lineWindow(text, at, 0, awsPairBack)
	hi := min(len(text), at+awsPairReach)
	for i := lo; i < hi; {
		if !isB64Byte(text[i]) {
			i++
			continue
		}
		j := i
		for j < hi && isB64Byte(text[j]) {
			j++
		}
		// The run must end inside the window, where what follows it is
		// known: '=' or a URL-safe byte after it means a longer blob.
		if j-i == awsSecretLen && (j == len(text) || j < hi && text[j] != '=' && text[j] != '-' && text[j] != '_') {
			if v := text[i:j]; awsSecretLike(v) {
				add(i, j)
			}
		}
		i = j
	}
}

// awsSecretLike reports whether a 40-byte run reads as random base64: all
// three letter-and-digit classes (a git SHA is lower-case hex), high
// entropy, no placeholder.
func awsSecretLike(v []byte) bool {
	var up, lo, dg bool
	for _, b := range v {
		switch {
		case b >= 'A' && b <= 'Z':
			up = true
		case b >= 'a' && b <= 'z':
			lo = true
		case isDigit(b):
			dg = true
		}
	}
	return up && lo && dg && entropy(v) >= 4 && !isPlaceholder(v)
}
