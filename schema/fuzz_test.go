package schema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"airlock.dev/airlock/tool"
)

// fuzzSchema exercises every kind of keyword a bounded schema uses.
const fuzzSchema = `{
	"type": "object",
	"additionalProperties": false,
	"required": ["path"],
	"properties": {
		"path":  {"type": "string", "maxLength": 64, "format": "relative-path"},
		"url":   {"type": "string", "maxLength": 128, "format": "http-url"},
		"limit": {"type": "integer", "minimum": 1, "maximum": 1000},
		"ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "multipleOf": 0.25},
		"mode":  {"enum": ["text", "bytes", null, 1]},
		"tags":  {"type": "array", "maxItems": 4, "uniqueItems": true,
		          "items": {"type": "string", "maxLength": 8, "pattern": "^[a-z]*$"}},
		"pair":  {"type": "array", "maxItems": 2, "prefixItems": [{"type": "boolean"}, {"const": "x"}], "items": false},
		"alt":   {"oneOf": [{"type": "string", "maxLength": 3}, {"type": "integer", "minimum": 0, "maximum": 9}]},
		"tree":  {"$ref": "#/$defs/node"}
	},
	"$defs": {
		"node": {"type": "object", "additionalProperties": false,
		         "properties": {"name": {"type": "string", "maxLength": 8},
		                        "kids": {"type": "array", "maxItems": 3, "items": {"$ref": "#/$defs/node"}}}}
	}
}`

// knownCodes are the codes Validate may return on any input.
var knownCodes = []tool.Code{tool.CodeInvalidArguments, tool.CodeArgumentsTooLarge}

// FuzzValidate checks, on any input, that Validate never panics and returns
// nil or an *tool.Error with a known code, a message and a hint; that
// violations are sorted, deduplicated and bounded; and that what Validate
// accepts is one JSON object that encoding/json also reads. The seed corpus
// is in testdata/fuzz/FuzzValidate.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		`{"path":"a"}`,
		`{"path":".","url":"https://example.com/a?b=1","limit":10,"ratio":0.5,"mode":null,"tags":["a","b"],"pair":[true,"x"],"alt":3}`,
		`{"path":"a","tree":{"name":"r","kids":[{"name":"k","kids":[]}]}}`,
		`{"path":"../x","limit":0,"tags":["a","a","B"],"pair":[1,2,3],"alt":"abcd","zz":1}`,
		`{"path":"a","path":"b"}`,
		`{"path":"a\u0000b","url":"http://user@h/"}`,
		`{"path":"a","ratio":1e-400}`,
		`{"path":"a","ratio":1e401}`,
		`{"path":"a","limit":123456789012345678901234567890}`,
		`{"path":`, `{`, `[`, `null`, ``, ` `, `{}{}`, `{"a":1,}`, `"x"`, `[[[[[[[[[[]]]]]]]]]]`,
		`{"path":"\ud800"}`, "{\"path\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	s, err := Compile("fuzz", json.RawMessage(fuzzSchema), &Options{MaxArgBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e := s.Validate(data)
		if e == nil {
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil || m == nil {
				t.Fatalf("Validate accepted %q, which encoding/json reads as %v (err %v)", data, m, err)
			}
			return
		}
		if !slices.Contains(knownCodes, e.Code) {
			t.Fatalf("Validate(%q) code %q, want one of %v (%s)", data, e.Code, knownCodes, e.Message)
		}
		if e.Message == "" || e.Hint == "" {
			t.Fatalf("Validate(%q) = %+v: want a message and a hint", data, e)
		}
		if e.Code == tool.CodeInvalidArguments && len(e.Violations) == 0 {
			t.Fatalf("Validate(%q) = %+v: invalid_arguments without violations", data, e)
		}
		if len(e.Violations) > MaxViolations {
			t.Fatalf("Validate(%q): %d violations, over MaxViolations", data, len(e.Violations))
		}
		for i, v := range e.Violations {
			if v.Pointer != "" && !strings.HasPrefix(v.Pointer, "/") {
				t.Fatalf("Validate(%q): pointer %q is not a JSON pointer", data, v.Pointer)
			}
			if len(v.Message) > MaxViolationMessage || v.Message == "" {
				t.Fatalf("Validate(%q): violation message %q", data, v.Message)
			}
			if i > 0 {
				prev := e.Violations[i-1]
				c := comparePointers(prev.Pointer, v.Pointer)
				if c > 0 || (c == 0 && prev.Message >= v.Message) {
					t.Fatalf("Validate(%q): violations not sorted and unique: %+v then %+v", data, prev, v)
				}
			}
		}
	})
}

// FuzzWithinLimits cross-checks the decoder's fast path against the token
// decoder: whatever the fast check lets through, the token decoder must
// accept too. Small limits let the fuzzer reach them.
func FuzzWithinLimits(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[1,2,{"c":"d"}]}`, `{"a":1,"a":2}`, `{"a":{"b":{"c":{"d":{"e":{}}}}}}`,
		`[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21]`, `{"\u0061":1,"a":2}`,
		`{"k":1e401}`, `{"n":-123456789012345,"m":[0,-0,7]}`, `{"n":1234567890123456}`, `{"f":1.5}`, `{"k":12345678901234567890123456789012345678901234567890}`, `"x"`, `{"a":"\"","a":1}`,
	} {
		f.Add([]byte(s))
	}
	lim := &decodeLimits{depth: 4, depthName: "MaxDepth", values: 20, valuesName: "MaxValues"}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || !utf8.Valid(data) {
			return
		}
		if ok, _ := withinLimits(data, lim); ok {
			want, err := decodeTokens(data, lim)
			if err != nil {
				t.Fatalf("fast path accepted %q, token decoder says %v", data, err)
			}
			// And the fast decoding gives the very same value, numbers
			// included.
			if got, err := decodeJSON(data, lim); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeJSON(%q) = %#v, %v; the token decoder gives %#v", data, got, err, want)
			}
		}
	})
}

// FuzzBound checks, on any schema document, that Bound does not fault
// (its recover would turn a panic into an "internally" error), and that
// whatever it returns is a bounded schema that Compile accepts, the same
// bytes every time, and one that Bound leaves as it is. The seeds are
// every schema in testdata/upstream; crashers are kept in
// testdata/fuzz/FuzzBound.
func FuzzBound(f *testing.F) {
	tools := loadUpstream(f)
	for _, name := range sortedKeys(tools) {
		f.Add([]byte(tools[name]))
	}
	for _, s := range []string{
		`{}`, `true`, `false`, `[]`, `{"type":"string"}`,
		`{"type":"object","properties":{"a":{"$ref":"#/definitions/a"}},"definitions":{"a":{"$ref":"#/definitions/a"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"https://example.com/x"}}}`,
		`{"type":"object","not":{"additionalProperties":{"type":"string"}},"if":{"format":"x"},"then":{"$ref":"#"}}`,
		`{"type":"object","properties":{"t":{"type":"array","items":[{"$ref":"#/properties/t/items/1"},{}],"additionalItems":true}}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"n":{"type":"integer","minimum":1,"exclusiveMinimum":true}},"dependencies":{"n":{"oneOf":[{"format":"q"},{}]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		out, err := Bound(doc, nil)
		if err != nil {
			if strings.Contains(err.Error(), "internally") {
				t.Fatalf("Bound(%s) faulted: %v", doc, err)
			}
			return
		}
		if err := CheckBounded(out); err != nil {
			t.Fatalf("Bound(%s) = %s, which CheckBounded refuses: %v", doc, out, err)
		}
		if _, err := Compile("fuzz", out, nil); err != nil {
			t.Fatalf("Bound(%s) = %s, which Compile refuses: %v", doc, out, err)
		}
		if again, err := Bound(doc, nil); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("Bound(%s) is not deterministic: %s, then %s (%v)", doc, out, again, err)
		}
		if twice, err := Bound(out, nil); err != nil || !bytes.Equal(twice, out) {
			t.Fatalf("Bound(Bound(%s)) = %s (%v), want %s", doc, twice, err, out)
		}
	})
}
