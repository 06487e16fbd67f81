package audit

import (
	"strconv"
	"unicode/utf8"
)

// appendEntry appends e's JSON to b: the same bytes as json.Marshal(e),
// without reflection, since an Append is on every call's path. An
// equivalence fuzz test (FuzzEntryJSON) keeps the two identical.
func appendEntry(b []byte, e *Entry) []byte {
	b = append(b, '{')
	first := true
	field := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	str := func(name, v string, omitEmpty bool) {
		if omitEmpty && v == "" {
			return
		}
		field(name)
		b = appendString(b, v)
	}
	str("call_id", e.CallID, true)
	str("session", e.Session, true)
	str("tool", e.Tool, false)
	str("role", e.Role, true)
	str("mode", e.Mode, true)
	str("decision", e.Decision, false)
	str("code", e.Code, true)
	str("rule", e.Rule, true)
	if len(e.Stages) > 0 {
		field("stages")
		b = append(b, '[')
		for i := range e.Stages {
			s := &e.Stages[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, s.Name)
			b = append(b, `,"decision":`...)
			b = appendString(b, s.Decision)
			if s.Code != "" {
				b = append(b, `,"code":`...)
				b = appendString(b, s.Code)
			}
			b = append(b, `,"us":`...)
			b = strconv.AppendInt(b, s.Micros, 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	field("args_bytes")
	b = strconv.AppendInt(b, int64(e.ArgsBytes), 10)
	str("args_sha256", e.ArgsSHA256, true)
	field("result_bytes")
	b = strconv.AppendInt(b, int64(e.ResultBytes), 10)
	str("result_sha256", e.ResultSHA256, true)
	str("note", e.Note, true)
	return append(b, '}')
}

// appendString appends s as a JSON string the way encoding/json writes it,
// HTML-safe escapes included.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
