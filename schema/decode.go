package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the decoder. Arguments are decoded token by token so that each
// of these is enforced while reading, before the value reaches the schema
// validator.
const (
	// MaxDepth is how deeply objects and arrays may nest in the arguments;
	// the arguments object itself is level 1. It bounds the recursion of the
	// decoder and of the validator.
	MaxDepth = 64

	// MaxSchemaDepth is how deeply objects and arrays may nest in a schema
	// document. A schema spends about two levels per level of the arguments
	// it describes ("properties", then the property's name).
	MaxSchemaDepth = 2 * MaxDepth

	// MaxKeyBytes is the longest object key accepted in the arguments. Keys
	// become the tokens of the JSON pointers that violations name, so this
	// bounds what an error can echo back.
	MaxKeyBytes = 256

	// MaxNumberLength is the longest number literal accepted, in bytes.
	// Numbers are compared exactly (as big rationals), and converting a very
	// long literal costs time that grows faster than its length.
	MaxNumberLength = 100

	// MaxValues is how many JSON values (objects, arrays, strings, numbers,
	// booleans and nulls, at any depth) the arguments may hold. Validation
	// work grows with the count; a bounded schema never needs this many,
	// but the byte cap alone would allow millions. Tripping it is
	// arguments_too_large.
	MaxValues = 1 << 16

	// MaxNumberExponent is the largest exponent magnitude accepted in a
	// number literal (1e400 is accepted, 1e401 is not): float64 ends near
	// 1e308, and an exact value of 1e999999 takes milliseconds to build.
	MaxNumberExponent = 400
)

// decodeError is a reason the input is not acceptable JSON. Offset is the
// byte offset where reading stopped (-1 when it does not help) and Pointer
// is where in the value the problem is, when known.
type decodeError struct {
	Offset   int64
	Pointer  string
	Msg      string
	TooLarge bool // a size limit (MaxValues) rather than a malformed input
}

func (e *decodeError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("%s (at byte offset %d)", e.Msg, e.Offset)
	}
	return e.Msg
}

// decoder reads one JSON value with the limits above, refusing duplicate
// keys, and builds the value the validator expects: map[string]any, []any,
// string, json.Number, bool or nil.
type decoder struct {
	dec    *json.Decoder
	lim    *decodeLimits
	values int
	path   []step // keys and indexes down to the current value
}

// step is one step of the path to a value: a key, or an index when key is
// not set. The pointer string is built only when an error needs it.
type step struct {
	key   string
	index int
	isKey bool
}

// decodeLimits are the depth and value-count limits of one decoding, with
// the names an error gives them.
type decodeLimits struct {
	depth      int
	depthName  string
	values     int
	valuesName string
}

var (
	argLimits    = &decodeLimits{MaxDepth, "MaxDepth", MaxValues, "MaxValues"}
	schemaLimits = &decodeLimits{MaxSchemaDepth, "MaxSchemaDepth", MaxSchemaValues, "MaxSchemaValues"}
)

// decodeJSON decodes exactly one JSON value from data. Empty input, input
// of only white space and anything after the value are errors.
func decodeJSON(data []byte, lim *decodeLimits) (any, *decodeError) {
	// encoding/json would quietly replace invalid UTF-8 with U+FFFD, so the
	// value validated would not be the bytes sent; refuse it instead.
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return nil, &decodeError{Offset: int64(off), Msg: "invalid UTF-8"}
	}
	// The fast path: well-formed JSON within every limit decodes in one
	// pass of the standard decoder. Anything else takes the token-by-token
	// path below, which names the problem and where it is.
	if json.Valid(data) {
		if ok, smallInts := withinLimits(data, lim); ok {
			var v any
			if smallInts {
				// Every number is an integer that float64 holds exactly, so
				// json.Unmarshal, twice as fast as a Decoder, loses nothing.
				if json.Unmarshal(data, &v) == nil {
					return exactNumbers(v), nil
				}
			} else {
				dec := json.NewDecoder(bytes.NewReader(data))
				dec.UseNumber()
				if err := dec.Decode(&v); err == nil {
					return v, nil
				}
			}
		}
	}
	return decodeTokens(data, lim)
}

// exactNumbers turns the float64 numbers json.Unmarshal makes into the
// json.Number values every other path gives, so callers see one type.
func exactNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = exactNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = exactNumbers(e)
		}
	case float64:
		return json.Number(strconv.FormatInt(int64(x), 10))
	}
	return v
}

// decodeTokens decodes token by token, enforcing each limit as it reads.
func decodeTokens(data []byte, lim *decodeLimits) (any, *decodeError) {
	d := &decoder{dec: json.NewDecoder(bytes.NewReader(data)), lim: lim}
	d.dec.UseNumber()
	tok, err := d.dec.Token()
	if err == io.EOF {
		return nil, &decodeError{Offset: -1, Msg: "empty input: want a JSON object"}
	}
	if err != nil {
		return nil, d.syntax(err)
	}
	v, derr := d.value(tok, 0)
	if derr != nil {
		return nil, derr
	}
	off := d.dec.InputOffset()
	if _, err := d.dec.Token(); err != io.EOF {
		if err != nil {
			return nil, d.syntax(err)
		}
		return nil, &decodeError{Offset: off, Msg: "unexpected data after the JSON value"}
	}
	return v, nil
}

// value builds the value that starts with tok, at nesting depth depth.
func (d *decoder) value(tok json.Token, depth int) (any, *decodeError) {
	if d.values++; d.values > d.lim.values {
		return nil, &decodeError{Offset: d.dec.InputOffset(), Pointer: d.pointer(), TooLarge: true,
			Msg: fmt.Sprintf("more than %d values (%s)", d.lim.values, d.lim.valuesName)}
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth+1 > d.lim.depth {
			return nil, &decodeError{Offset: d.dec.InputOffset() - 1, Pointer: d.pointer(),
				Msg: fmt.Sprintf("nesting deeper than %d levels (%s)", d.lim.depth, d.lim.depthName)}
		}
		if t == '{' {
			return d.object(depth + 1)
		}
		return d.array(depth + 1)
	case json.Number:
		if err := checkNumber(string(t)); err != "" {
			return nil, &decodeError{Offset: d.dec.InputOffset() - int64(len(t)), Pointer: d.pointer(), Msg: err}
		}
		return t, nil
	default: // string, bool, nil
		return t, nil
	}
}

func (d *decoder) object(depth int) (any, *decodeError) {
	m := map[string]any{}
	for d.dec.More() {
		off := d.dec.InputOffset()
		tok, err := d.dec.Token()
		if err != nil {
			return nil, d.syntax(err)
		}
		key, ok := tok.(string)
		if !ok { // the decoder reports a non-string key itself; keep a guard
			return nil, &decodeError{Offset: off, Pointer: d.pointer(), Msg: "object key is not a string"}
		}
		if len(key) > MaxKeyBytes {
			return nil, &decodeError{Offset: off, Pointer: d.pointer(),
				Msg: fmt.Sprintf("object key of %d bytes is longer than %d (MaxKeyBytes)", len(key), MaxKeyBytes)}
		}
		d.path = append(d.path, step{key: key, isKey: true})
		if _, dup := m[key]; dup {
			return nil, &decodeError{Offset: off, Pointer: d.pointer(),
				Msg: fmt.Sprintf("duplicate key %q: each key may appear once", key)}
		}
		tok, err = d.dec.Token()
		if err != nil {
			return nil, d.syntax(err)
		}
		v, derr := d.value(tok, depth)
		if derr != nil {
			return nil, derr
		}
		d.path = d.path[:len(d.path)-1]
		m[key] = v
	}
	if err := d.close(); err != nil {
		return nil, err
	}
	return m, nil
}

func (d *decoder) array(depth int) (any, *decodeError) {
	a := []any{}
	for i := 0; d.dec.More(); i++ {
		d.path = append(d.path, step{index: i})
		tok, err := d.dec.Token()
		if err != nil {
			return nil, d.syntax(err)
		}
		v, derr := d.value(tok, depth)
		if derr != nil {
			return nil, derr
		}
		d.path = d.path[:len(d.path)-1]
		a = append(a, v)
	}
	if err := d.close(); err != nil {
		return nil, err
	}
	return a, nil
}

// close reads the delimiter that ends an object or array. More has said
// there is nothing else, so anything but the delimiter is a syntax error.
func (d *decoder) close() *decodeError {
	if _, err := d.dec.Token(); err != nil {
		return d.syntax(err)
	}
	return nil
}

// syntax turns a decoder error into a decodeError naming the syntax error
// and its offset. The decoder reports a truncated value as a bare io.EOF.
func (d *decoder) syntax(err error) *decodeError {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return &decodeError{Offset: se.Offset, Pointer: d.pointer(), Msg: "invalid JSON: " + se.Error()}
	case err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF):
		return &decodeError{Offset: d.dec.InputOffset(), Pointer: d.pointer(), Msg: "invalid JSON: unexpected end of input"}
	default:
		return &decodeError{Offset: d.dec.InputOffset(), Pointer: d.pointer(), Msg: "invalid JSON: " + err.Error()}
	}
}

func (d *decoder) pointer() string {
	tokens := make([]string, len(d.path))
	for i, s := range d.path {
		if s.isKey {
			tokens[i] = s.key
		} else {
			tokens[i] = strconv.Itoa(s.index)
		}
	}
	return pointer(tokens)
}

// pointer writes tokens as an RFC 6901 JSON pointer; no tokens is "".
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		escapeToken(&b, t)
	}
	return b.String()
}

func escapeToken(b *strings.Builder, t string) {
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteByte(t[i])
		}
	}
}

// checkNumber applies MaxNumberLength and MaxNumberExponent to a number
// literal the decoder has already found well formed. It returns why the
// literal is refused, or "".
func checkNumber(lit string) string {
	if len(lit) > MaxNumberLength {
		return fmt.Sprintf("number literal of %d bytes is longer than %d (MaxNumberLength)", len(lit), MaxNumberLength)
	}
	i := strings.IndexAny(lit, "eE")
	if i < 0 {
		return ""
	}
	exp := strings.TrimLeft(lit[i+1:], "+-")
	exp = strings.TrimLeft(exp, "0")
	if n, err := strconv.Atoi(exp); len(exp) > 0 && (err != nil || n > MaxNumberExponent) {
		return fmt.Sprintf("number %s has an exponent beyond ±%d (MaxNumberExponent)", lit, MaxNumberExponent)
	}
	return ""
}

// withinLimits reports whether data, already known to be well-formed JSON,
// keeps every decoder limit and repeats no key, and whether every number
// in it is an integer of at most 15 digits (exact in a float64). It allocates nothing for
// small objects. A false answer sends the input to the token decoder,
// which finds and names the problem; keys with escapes go there too, as
// comparing them needs unescaping.
func withinLimits(data []byte, lim *decodeLimits) (ok, smallInts bool) {
	type frame struct {
		obj       bool
		expectKey bool
		keys      [][2]int // offsets of this object's keys, for duplicates
	}
	var (
		stack  [16]frame
		frames = stack[:0]
		values int
	)
	smallInts = true
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':':
			i++
			continue
		case c == ',':
			if n := len(frames); n > 0 && frames[n-1].obj {
				frames[n-1].expectKey = true
			}
			i++
			continue
		case c == '{' || c == '[':
			if len(frames)+1 > lim.depth {
				return false, false
			}
			frames = append(frames, frame{obj: c == '{', expectKey: c == '{'})
			i++
		case c == '}' || c == ']':
			frames = frames[:len(frames)-1]
			i++
			continue // counted when opened
		case c == '"':
			j := i + 1
			for data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			if n := len(frames); n > 0 && frames[n-1].expectKey {
				f := &frames[n-1]
				f.expectKey = false
				key := data[i+1 : j]
				if len(key) > MaxKeyBytes || bytes.IndexByte(key, '\\') >= 0 {
					return false, false
				}
				for _, k := range f.keys {
					if bytes.Equal(data[k[0]:k[1]], key) {
						return false, false
					}
				}
				if len(f.keys) >= 64 {
					return false, false // a wide object: the token decoder checks it with a map
				}
				f.keys = append(f.keys, [2]int{i + 1, j})
				i = j + 1
				continue // a key is not a value
			}
			i = j + 1
		case c == 't' || c == 'n':
			i += 4
		case c == 'f':
			i += 5
		default: // a number
			j := i
			exp, plain := false, true
			for j < len(data) && strings.IndexByte("+-.0123456789eE", data[j]) >= 0 {
				exp = exp || data[j] == 'e' || data[j] == 'E'
				plain = plain && (data[j] == '-' || '0' <= data[j] && data[j] <= '9')
				j++
			}
			if j-i > MaxNumberLength || exp && checkNumber(string(data[i:j])) != "" {
				return false, false
			}
			// "-0" would come back from a float64 as "0".
			negZero := j-i >= 2 && data[i] == '-' && data[i+1] == '0'
			smallInts = smallInts && plain && !negZero && j-i <= 15
			i = j
		}
		if values++; values > lim.values {
			return false, false
		}
	}
	return true, smallInts
}
