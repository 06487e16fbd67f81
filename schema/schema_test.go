package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"airlock.dev/airlock/tool"
)

// obj wraps property schemas into a bounded top-level object schema.
func obj(props string) string {
	return `{"type":"object","additionalProperties":false,"properties":{` + props + `}}`
}

func TestCheckBoundedRefuses(t *testing.T) {
	str := `{"type":"string","maxLength":10}`
	tests := []struct {
		name   string
		doc    string
		ptr    string // the pointer the error must name
		reason string // a part of the reason
	}{
		{"not an object", `[]`, "", "must be an object"},
		{"top without type", `{"additionalProperties":false}`, "", `"type": "object"`},
		{"top array", `{"type":"array","maxItems":1,"items":false}`, "", `"type": "object"`},
		{"top type list", `{"type":["object"],"additionalProperties":false}`, "", `"type": "object"`},
		{"top open object", `{"type":"object"}`, "", `additionalProperties`},
		{"additionalProperties true", `{"type":"object","additionalProperties":true}`, "/additionalProperties", "must be false"},
		{"additionalProperties schema", `{"type":"object","additionalProperties":` + str + `}`, "/additionalProperties", "must be false"},
		{"unevaluatedProperties schema", `{"type":"object","unevaluatedProperties":` + str + `}`, "/unevaluatedProperties", "must be false"},
		{"string without maxLength", obj(`"path":{"type":"string"}`), "/properties/path", "string without maxLength"},
		{"maxLength not a number", obj(`"path":{"type":"string","maxLength":"10"}`), "/properties/path", "string without maxLength"},
		{"array without maxItems", obj(`"a":{"type":"array","items":` + str + `}`), "/properties/a", "array without maxItems"},
		{"array without items", obj(`"a":{"type":"array","maxItems":3}`), "/properties/a", "array without items"},
		{"items list", obj(`"a":{"type":"array","maxItems":3,"items":[` + str + `]}`), "/properties/a/items", "prefixItems"},
		{"unbounded items", obj(`"a":{"type":"array","maxItems":3,"items":{"type":"string"}}`), "/properties/a/items", "string without maxLength"},
		{"unbounded prefixItems", obj(`"a":{"type":"array","maxItems":3,"prefixItems":[{}],"items":false}`), "/properties/a/prefixItems/0", "unconstrained"},
		{"number without minimum", obj(`"n":{"type":"number","maximum":3}`), "/properties/n", "number without minimum"},
		{"integer without maximum", obj(`"n":{"type":"integer","minimum":0}`), "/properties/n", "integer without maximum"},
		{"integer with one exclusive bound", obj(`"n":{"type":"integer","exclusiveMinimum":0}`), "/properties/n", "integer without maximum"},
		{"property without type", obj(`"x":{}`), "/properties/x", "unconstrained"},
		{"property with only a description", obj(`"x":{"description":"anything"}`), "/properties/x", "unconstrained"},
		{"property true", obj(`"x":true`), "/properties/x", "unconstrained"},
		{"property not a schema", obj(`"x":3`), "/properties/x", "object or a boolean"},
		{"nested open object", obj(`"o":{"type":"object","properties":{}}`), "/properties/o", `additionalProperties`},
		{"nested unbounded string", obj(`"o":{"type":"object","additionalProperties":false,"properties":{"s":{"type":"string"}}}`), "/properties/o/properties/s", "string without maxLength"},
		{"object in items", obj(`"a":{"type":"array","maxItems":3,"items":{"type":"object"}}`), "/properties/a/items", `additionalProperties`},
		{"type list with unbounded string", obj(`"x":{"type":["string","null"]}`), "/properties/x", "string without maxLength"},
		{"unknown type", obj(`"x":{"type":"text"}`), "/properties/x/type", `unknown type "text"`},
		{"empty type list", obj(`"x":{"type":[]}`), "/properties/x/type", "non-empty"},
		{"unbounded $defs", `{"type":"object","additionalProperties":false,"$defs":{"s":{"type":"string"}}}`, "/$defs/s", "string without maxLength"},
		{"anyOf branch unbounded", obj(`"x":{"anyOf":[` + str + `,{"type":"string"}]}`), "/properties/x/anyOf/1", "string without maxLength"},
		{"oneOf branch unconstrained", obj(`"x":{"oneOf":[` + str + `,{"minLength":1}]}`), "/properties/x/oneOf/1", "unconstrained"},
		{"allOf branch unconstrained", obj(`"x":{"allOf":[{"pattern":"a"}]}`), "/properties/x/allOf/0", "unconstrained"},
		{"empty anyOf", obj(`"x":{"anyOf":[]}`), "/properties/x/anyOf", "non-empty"},
		{"remote $ref", obj(`"x":{"$ref":"https://example.com/s.json"}`), "/properties/x/$ref", "only references inside this schema"},
		{"relative $ref", obj(`"x":{"$ref":"other.json#/$defs/s"}`), "/properties/x/$ref", "only references inside this schema"},
		{"anchor $ref", obj(`"x":{"$ref":"#name"}`), "/properties/x/$ref", "only references inside this schema"},
		{"$ref to a missing $defs", obj(`"x":{"$ref":"#/$defs/none"}`), "/properties/x/$ref", "not a bounded schema"},
		{"$ref to an annotation", `{"type":"object","additionalProperties":false,"examples":[{"type":"string"}],"properties":{"x":{"$ref":"#/examples/0"}}}`, "/properties/x/$ref", "not a bounded schema"},
		{"$ref into a not", `{"type":"object","additionalProperties":false,"not":{"type":"string"},"properties":{"x":{"$ref":"#/not"}}}`, "/properties/x/$ref", "not a bounded schema"},
		{"$ref loop", `{"type":"object","additionalProperties":false,"properties":{"x":{"$ref":"#/$defs/a"}},"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`, "/$defs/a", "loop"},
		{"$ref loop through anyOf", `{"type":"object","additionalProperties":false,"anyOf":[{"$ref":"#"}]}`, "", "loop"},
		{"$ref to itself", `{"type":"object","additionalProperties":false,"$defs":{"a":{"$ref":"#/$defs/a"}}}`, "/$defs/a", "loop"},
		{"$dynamicRef", obj(`"x":{"$dynamicRef":"#meta"}`), "/properties/x/$dynamicRef", "not supported"},
		{"nested $id", obj(`"x":{"$id":"https://example.com/x","type":"boolean"}`), "/properties/x/$id", "only at the top level"},
		{"nested $schema", obj(`"x":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"boolean"}`), "/properties/x/$schema", "only at the top level"},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false}`, "/$schema", "unsupported $schema"},
		{"unknown format", obj(`"p":{"type":"string","maxLength":9,"format":"relative_path"}`), "/properties/p/format", `unknown format "relative_path"`},
		{"patternProperties without maxProperties", obj(`"o":{"type":"object","additionalProperties":false,"patternProperties":{"^a":` + str + `}}`), "/properties/o", "maxProperties"},
		{"unbounded patternProperties", obj(`"o":{"type":"object","additionalProperties":false,"maxProperties":3,"patternProperties":{"^a":{}}}`), "/properties/o/patternProperties/^a", "unconstrained"},
		{"pointer escaping", obj(`"a/b~c":{"type":"string"}`), "/properties/a~1b~0c", "string without maxLength"},
		{"unbounded property inside a branch", `{"type":"object","unevaluatedProperties":false,"anyOf":[{"properties":{"x":{}}}]}`, "/anyOf/0/properties/x", "unconstrained"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckBounded(json.RawMessage(tt.doc))
			var ue *UnboundedError
			if !errors.As(err, &ue) {
				t.Fatalf("CheckBounded(%s) = %v, want an *UnboundedError", tt.doc, err)
			}
			if got, want := ue.Pointer, tt.ptr; got != want {
				t.Errorf("pointer = %q, want %q (%v)", got, want, err)
			}
			if !strings.Contains(ue.Reason, tt.reason) {
				t.Errorf("reason %q does not contain %q", ue.Reason, tt.reason)
			}
			// Compile runs the same check and names the tool first.
			_, cerr := Compile("read_file", json.RawMessage(tt.doc), nil)
			if cerr == nil || !strings.HasPrefix(cerr.Error(), `schema "read_file": `) || !errors.As(cerr, &ue) {
				t.Errorf("Compile error = %v, want it to start with the schema's name and wrap the *UnboundedError", cerr)
			}
		})
	}
}

func TestCheckBoundedErrorText(t *testing.T) {
	_, err := Compile("read_file", json.RawMessage(obj(`"path":{"type":"string"}`)), nil)
	if got, want := fmt.Sprint(err), `schema "read_file": /properties/path: string without maxLength`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCheckBoundedNotJSON(t *testing.T) {
	tests := []struct{ doc, want string }{
		{``, "schema is not acceptable JSON: empty input"},
		{`{`, "schema is not acceptable JSON: invalid JSON: unexpected end of input"},
		{`{"type":"object"} {}`, "unexpected data after the JSON value"},
		{strings.Repeat("[", MaxSchemaDepth+1), "nesting deeper than 128 levels (MaxSchemaDepth)"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"boolean"},"a":{"type":"string"}}}`,
			`schema is not acceptable JSON: /properties/a: duplicate key "a"`},
	}
	for _, tt := range tests {
		err := CheckBounded(json.RawMessage(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckBounded(%.40q) = %v, want an error containing %q", tt.doc, err, tt.want)
		}
	}
	big := `{"type":"object","additionalProperties":false,"description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`
	if err := CheckBounded(json.RawMessage(big)); err == nil || !strings.Contains(err.Error(), "MaxSchemaBytes") {
		t.Errorf("CheckBounded(huge) = %v, want an error naming MaxSchemaBytes", err)
	}
}

func TestCheckBoundedAccepts(t *testing.T) {
	str := `{"type":"string","maxLength":10}`
	tests := []struct{ name, doc string }{
		{"no arguments", `{"type":"object","additionalProperties":false}`},
		{"read_file", `{"type":"object","additionalProperties":false,"required":["path"],"properties":{
			"path":{"type":"string","maxLength":4096,"format":"relative-path","description":"file to read"},
			"offset":{"type":"integer","minimum":0,"maximum":1000000},
			"limit":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10001}}}`},
		{"draft and id", `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://airlock.dev/s/x.json","type":"object","additionalProperties":false,
			"properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":` + str + `}}`},
		{"draft with empty fragment", `{"$schema":"https://json-schema.org/draft/2020-12/schema#","type":"object","additionalProperties":false}`},
		{"enum without type", obj(`"mode":{"enum":["a","b"]}`)},
		{"const without type", obj(`"v":{"const":1}`)},
		{"boolean and null", obj(`"b":{"type":"boolean"},"n":{"type":["null","string"],"maxLength":3}`)},
		{"anyOf of bounded branches", obj(`"x":{"anyOf":[` + str + `,{"type":"integer","minimum":0,"maximum":9}]}`)},
		{"narrowing branches of a typed object", `{"type":"object","additionalProperties":false,
			"properties":{"a":` + str + `,"b":` + str + `},"oneOf":[{"required":["a"]},{"required":["b"]}]}`},
		{"narrowing not and if", obj(`"x":{"type":"string","maxLength":9,"not":{"const":"root"},"if":{"minLength":3},"then":{"pattern":"^a"},"else":{"pattern":"^b"}}`)},
		{"$defs and $ref", `{"type":"object","additionalProperties":false,"properties":{"a":{"$ref":"#/$defs/name"},"b":{"$ref":"#/$defs/name"}},
			"$defs":{"name":` + str + `}}`},
		{"percent-encoded $ref", `{"type":"object","additionalProperties":false,"properties":{"a":{"$ref":"#/$defs/a%20name"}},"$defs":{"a name":` + str + `}}`},
		{"recursive tree", `{"type":"object","additionalProperties":false,"properties":{"root":{"$ref":"#/$defs/node"}},
			"$defs":{"node":{"type":"object","additionalProperties":false,"properties":{"name":` + str + `,
			"children":{"type":"array","maxItems":4,"items":{"$ref":"#/$defs/node"}}}}}}`},
		{"ref to root", obj(`"again":{"$ref":"#"}`)},
		{"unevaluatedProperties", `{"type":"object","unevaluatedProperties":false,"allOf":[{"properties":{"a":` + str + `}}]}`},
		{"tuple", obj(`"pair":{"type":"array","maxItems":2,"prefixItems":[` + str + `,{"type":"number","minimum":-1,"maximum":1}],"items":false}`)},
		{"bounded map", obj(`"env":{"type":"object","additionalProperties":false,"maxProperties":8,"patternProperties":{"^[A-Z_]+$":` + str + `}}`)},
		{"false property", obj(`"never":false`)},
		{"formats", obj(`"p":{"type":"string","maxLength":99,"format":"relative-path"},"u":{"type":"string","maxLength":99,"format":"http-url"},"d":{"type":"string","maxLength":99,"format":"date-time"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckBounded(json.RawMessage(tt.doc)); err != nil {
				t.Fatalf("CheckBounded = %v, want nil", err)
			}
			if _, err := Compile("t", json.RawMessage(tt.doc), nil); err != nil {
				t.Fatalf("Compile = %v, want nil", err)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		opts *Options
		want string
	}{
		{"bad regex", obj(`"s":{"type":"string","maxLength":3,"pattern":"("}`), nil, `schema "t" does not compile`},
		{"negative maxLength", obj(`"s":{"type":"string","maxLength":-1}`), nil, `schema "t" does not compile`},
		{"required not a list", `{"type":"object","additionalProperties":false,"required":"a"}`, nil, `schema "t" does not compile`},
		{"negative MaxArgBytes", `{"type":"object","additionalProperties":false}`, &Options{MaxArgBytes: -1}, "MaxArgBytes is negative"},
		{"not JSON", `{"type":`, nil, `schema "t": schema is not acceptable JSON: /type: invalid JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile("t", json.RawMessage(tt.doc), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compile = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestLoaderRefusesRemote checks the second wall: past CheckBounded, the
// compiler's loader still refuses every URL.
func TestLoaderRefusesRemote(t *testing.T) {
	for _, doc := range []string{
		obj(`"x":{"$ref":"https://example.com/s.json"}`),
		obj(`"x":{"$ref":"file:///etc/passwd"}`),
		`{"$schema":"https://example.com/meta.json","type":"object","additionalProperties":false}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		_, err := compile("t", v)
		if err == nil || !strings.Contains(err.Error(), "remote $ref is off") {
			t.Errorf("compile(%s) = %v, want the loader's refusal", doc, err)
		}
	}
}

// toolSchema is the schema most Validate tests use.
const toolSchema = `{
	"type": "object",
	"additionalProperties": false,
	"required": ["path"],
	"properties": {
		"path":  {"type": "string", "maxLength": 64, "format": "relative-path"},
		"url":   {"type": "string", "maxLength": 256, "format": "http-url"},
		"limit": {"type": "integer", "minimum": 1, "maximum": 1000},
		"ratio": {"type": "number", "minimum": 0, "maximum": 1},
		"mode":  {"enum": ["text", "bytes"]},
		"tags":  {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 8}},
		"opts":  {"type": "object", "additionalProperties": false,
		          "properties": {"follow": {"type": "boolean"}}},
		"big":   {"type": "integer", "minimum": 0, "maximum": 100000000000000000000000}
	}
}`

func mustCompile(t testing.TB, doc string, opts *Options) *Schema {
	t.Helper()
	s, err := Compile("read_file", json.RawMessage(doc), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pointers(e *tool.Error) []string {
	var ps []string
	for _, v := range e.Violations {
		ps = append(ps, v.Pointer)
	}
	return ps
}

func TestValidate(t *testing.T) {
	s := mustCompile(t, toolSchema, nil)
	tests := []struct {
		name     string
		args     string
		code     tool.Code // "" for valid
		pointers []string  // the violations' pointers, in order
		msg      string    // a part of the message
	}{
		{"valid minimal", `{"path":"notes/a.txt"}`, "", nil, ""},
		{"valid full", `{"path":"a","url":"https://example.com/a?b=1","limit":10,"ratio":0.5,"mode":"text","tags":["x","y"],"opts":{"follow":true}}`, "", nil, ""},
		{"valid with white space", " \n{ \"path\" : \".\" }\t", "", nil, ""},
		{"large integer stays exact", `{"path":"a","big":99999999999999999999999}`, "", nil, ""},
		{"large integer just over", `{"path":"a","big":100000000000000000000001}`, tool.CodeInvalidArguments, []string{"/big"}, "maximum"},
		{"empty", ``, tool.CodeInvalidArguments, []string{""}, "empty input"},
		{"white space", "  \n\t", tool.CodeInvalidArguments, []string{""}, "empty input"},
		{"null", `null`, tool.CodeInvalidArguments, []string{""}, "must be a JSON object, got null"},
		{"array", `[{"path":"a"}]`, tool.CodeInvalidArguments, []string{""}, "got an array"},
		{"string", `"a"`, tool.CodeInvalidArguments, []string{""}, "got a string"},
		{"truncated", `{"path":"a"`, tool.CodeInvalidArguments, []string{""}, "unexpected end of input (at byte offset 11)"},
		{"truncated in a string", `{"path":"a`, tool.CodeInvalidArguments, []string{"/path"}, "unexpected end of input"},
		{"trailing comma", `{"path":"a",}`, tool.CodeInvalidArguments, []string{""}, "invalid character '}' looking for beginning of object key string (at byte offset 12)"},
		{"single quotes", `{'path':'a'}`, tool.CodeInvalidArguments, []string{""}, "invalid character '\\'' (at byte offset 1)"},
		{"missing colon", `{"path" "a"}`, tool.CodeInvalidArguments, []string{"/path"}, "after object key"},
		{"missing comma", `{"tags":["a" "b"],"path":"a"}`, tool.CodeInvalidArguments, []string{"/tags/1"}, "after array element"},
		{"second value", `{"path":"a"}{"path":"b"}`, tool.CodeInvalidArguments, []string{""}, "unexpected data after the JSON value (at byte offset 12)"},
		{"trailing garbage", `{"path":"a"} x`, tool.CodeInvalidArguments, []string{""}, "invalid character 'x'"},
		{"invalid UTF-8", "{\"path\":\"a\xffb\"}", tool.CodeInvalidArguments, []string{""}, "invalid UTF-8 (at byte offset 10)"},
		{"escaped lone surrogate", `{"path":"a\ud800"}`, "", nil, ""},
		{"NaN", `{"path":"a","ratio":NaN}`, tool.CodeInvalidArguments, []string{"/ratio"}, "invalid character 'N'"},
		{"missing required", `{}`, tool.CodeInvalidArguments, []string{"/path"}, "required property is missing"},
		{"unknown property", `{"path":"a","recursive":true}`, tool.CodeInvalidArguments, []string{"/recursive"}, "/recursive: unknown property"},
		{"unknown nested property", `{"path":"a","opts":{"follow":true,"x":1}}`, tool.CodeInvalidArguments, []string{"/opts/x"}, "unknown property"},
		{"wrong type string", `{"path":7}`, tool.CodeInvalidArguments, []string{"/path"}, "got number, want string"},
		{"wrong type integer", `{"path":"a","limit":"10"}`, tool.CodeInvalidArguments, []string{"/limit"}, "got string, want integer"},
		{"fraction for integer", `{"path":"a","limit":1.5}`, tool.CodeInvalidArguments, []string{"/limit"}, "want integer"},
		{"wrong type object", `{"path":"a","opts":[]}`, tool.CodeInvalidArguments, []string{"/opts"}, "got array, want object"},
		{"null property", `{"path":null}`, tool.CodeInvalidArguments, []string{"/path"}, "got null, want string"},
		{"enum", `{"path":"a","mode":"lines"}`, tool.CodeInvalidArguments, []string{"/mode"}, "one of"},
		{"too long", `{"path":"` + strings.Repeat("a", 65) + `"}`, tool.CodeInvalidArguments, []string{"/path"}, "maxLength"},
		{"too many items", `{"path":"a","tags":["a","b","c","d"]}`, tool.CodeInvalidArguments, []string{"/tags"}, "maxItems"},
		{"bad item", `{"path":"a","tags":["a","b",3]}`, tool.CodeInvalidArguments, []string{"/tags/2"}, "/tags/2: got number, want string"},
		{"several violations", `{"path":"../x","limit":0,"tags":["a","123456789",3],"mode":"x","zz":1}`,
			tool.CodeInvalidArguments, []string{"/limit", "/mode", "/path", "/tags/1", "/tags/2", "/zz"}, "6 arguments are invalid: /limit: "},
		{"duplicate key", `{"path":"a","path":"../../etc/passwd"}`, tool.CodeInvalidArguments, []string{"/path"}, `duplicate key "path"`},
		{"duplicate nested key", `{"path":"a","opts":{"follow":false,"follow":true}}`, tool.CodeInvalidArguments, []string{"/opts/follow"}, "duplicate key"},
		{"duplicate key in an array", `{"path":"a","tags":[{"k":1,"k":2}]}`, tool.CodeInvalidArguments, []string{"/tags/0/k"}, "duplicate key"},
		{"duplicate escaped key", `{"path":"a","p\u0061th":"b"}`, tool.CodeInvalidArguments, []string{"/path"}, "duplicate key"},
		{"same key in two objects", `{"path":"a","opts":{"follow":true},"tags":[]}`, "", nil, ""},
		{"deep nesting", `{"path":"a","opts":` + strings.Repeat(`{"x":`, 100) + `1` + strings.Repeat(`}`, 100) + `}`,
			tool.CodeInvalidArguments, []string{"/opts" + strings.Repeat("/x", MaxDepth-1)}, "MaxDepth"},
		{"deep arrays", strings.Repeat(`[`, 100000), tool.CodeInvalidArguments, []string{strings.Repeat("/0", MaxDepth)}, "nesting deeper than 64 levels (MaxDepth)"},
		{"long key", `{"path":"a","` + strings.Repeat("k", MaxKeyBytes+1) + `":1}`, tool.CodeInvalidArguments, []string{""}, "MaxKeyBytes"},
		{"long number", `{"path":"a","limit":1` + strings.Repeat("0", MaxNumberLength) + `}`, tool.CodeInvalidArguments, []string{"/limit"}, "MaxNumberLength"},
		{"huge exponent", `{"path":"a","ratio":1e999999}`, tool.CodeInvalidArguments, []string{"/ratio"}, "MaxNumberExponent"},
		{"huge negative exponent", `{"path":"a","ratio":1E-401}`, tool.CodeInvalidArguments, []string{"/ratio"}, "MaxNumberExponent"},
		{"exponent at the limit", `{"path":"a","ratio":1e-400}`, "", nil, ""},
		{"exponent with zeros", `{"path":"a","ratio":1e-0000000000000000000000000000400}`, "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := s.Validate(json.RawMessage(tt.args))
			if tt.code == "" {
				if e != nil {
					t.Fatalf("Validate(%s) = %+v, want nil", tt.args, e)
				}
				return
			}
			if e == nil {
				t.Fatalf("Validate(%s) = nil, want %s", tt.args, tt.code)
			}
			if got, want := e.Code, tt.code; got != want {
				t.Errorf("code = %s, want %s", got, want)
			}
			if got, want := pointers(e), tt.pointers; !slices.Equal(got, want) {
				t.Errorf("pointers = %q, want %q", got, want)
			}
			if !strings.Contains(e.Message, tt.msg) {
				t.Errorf("message %q does not contain %q", e.Message, tt.msg)
			}
			if e.Hint == "" {
				t.Error("no hint")
			}
		})
	}
}

func TestValidateSummary(t *testing.T) {
	s := mustCompile(t, toolSchema, nil)
	e := s.Validate(json.RawMessage(`{"path":"/etc/passwd","limit":5000}`))
	if e == nil {
		t.Fatal("want violations")
	}
	want := &tool.Error{
		Code:    tool.CodeInvalidArguments,
		Message: "2 arguments are invalid: /limit: 5000 is greater than the maximum 1000, /path: not a valid relative-path: the path is absolute; give it relative to the workspace root",
		Hint:    "Fix every listed argument and call again; the tool's schema lists what each accepts",
		Violations: []tool.Violation{
			{Pointer: "/limit", Message: "5000 is greater than the maximum 1000"},
			{Pointer: "/path", Message: "not a valid relative-path: the path is absolute; give it relative to the workspace root"},
		},
	}
	got, _ := json.Marshal(e)
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) {
		t.Errorf("got  %s\nwant %s", got, wantJSON)
	}
}

func TestValidateTooLarge(t *testing.T) {
	small := mustCompile(t, toolSchema, &Options{MaxArgBytes: 32})
	args := `{"path":"` + strings.Repeat("a", 30) + `"}`
	e := small.Validate(json.RawMessage(args))
	if e == nil || e.Code != tool.CodeArgumentsTooLarge {
		t.Fatalf("Validate = %+v, want arguments_too_large", e)
	}
	if want := "arguments are 41 bytes, over the limit of 32 bytes (MaxArgBytes)"; e.Message != want {
		t.Errorf("message = %q, want %q", e.Message, want)
	}
	if !strings.Contains(e.Hint, "Send less") {
		t.Errorf("hint = %q, want it to say to send less", e.Hint)
	}
	if e := small.Validate(json.RawMessage(`{"path":"a"}`)); e != nil {
		t.Errorf("small arguments: %v", e)
	}

	// The default cap: one byte over is refused before decoding, even
	// though it is not JSON.
	def := mustCompile(t, toolSchema, nil)
	over := make([]byte, DefaultMaxArgBytes+1)
	if e := def.Validate(over); e == nil || e.Code != tool.CodeArgumentsTooLarge {
		t.Errorf("DefaultMaxArgBytes+1 bytes: %+v, want arguments_too_large", e)
	}

	// MaxValues: within the byte cap, too many values.
	many := `{"path":"a","tags":[` + strings.Repeat("0,", MaxValues) + `0]}`
	if e := def.Validate(json.RawMessage(many)); e == nil || e.Code != tool.CodeArgumentsTooLarge || !strings.Contains(e.Message, "MaxValues") {
		t.Errorf("too many values: %+v, want arguments_too_large naming MaxValues", e)
	}
}

func TestValidateManyViolations(t *testing.T) {
	s := mustCompile(t, obj(`"a":{"type":"array","maxItems":500,"items":{"type":"string","maxLength":1}}`), nil)
	items := make([]string, 150)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	args, _ := json.Marshal(map[string]any{"a": items})
	e := s.Validate(args)
	if e == nil {
		t.Fatal("want violations")
	}
	if got, want := len(e.Violations), MaxViolations; got != want {
		t.Errorf("%d violations listed, want %d", got, want)
	}
	// Items 0..9 are valid; 10..149 are too long: 140 violations, sorted by
	// index as a number.
	if got, want := e.Violations[0].Pointer, "/a/10"; got != want {
		t.Errorf("first pointer %q, want %q", got, want)
	}
	if got, want := e.Violations[MaxViolations-1].Pointer, "/a/109"; got != want {
		t.Errorf("last pointer %q, want %q", got, want)
	}
	for _, want := range []string{"140 arguments are invalid: ", "and 130 more (the first 100 are listed; MaxViolations)"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q does not contain %q", e.Message, want)
		}
	}
}

func TestValidateDeduplicates(t *testing.T) {
	// Both branches refuse the same way: the violation is listed once.
	s := mustCompile(t, obj(`"x":{"anyOf":[{"type":"string","maxLength":3},{"type":"string","maxLength":3,"pattern":"^a"}]}`), nil)
	e := s.Validate(json.RawMessage(`{"x":true}`))
	if e == nil {
		t.Fatal("want a violation")
	}
	want := []tool.Violation{{Pointer: "/x", Message: "got boolean, want string"}}
	if !slices.Equal(e.Violations, want) {
		t.Errorf("violations = %+v, want %+v", e.Violations, want)
	}
}

func TestValidateClipsMessages(t *testing.T) {
	long := strings.Repeat("é", 300)
	s := mustCompile(t, obj(`"x":{"enum":["`+long+`"]}`), nil)
	e := s.Validate(json.RawMessage(`{"x":"b"}`))
	if e == nil {
		t.Fatal("want a violation")
	}
	msg := e.Violations[0].Message
	if len(msg) > MaxViolationMessage || !strings.HasSuffix(msg, "…") || !strings.HasPrefix(msg, "value must be") {
		t.Errorf("message of %d bytes: %q, want at most %d ending in …", len(msg), msg, MaxViolationMessage)
	}
}

func TestFormats(t *testing.T) {
	s := mustCompile(t, obj(`"p":{"type":"string","maxLength":64,"format":"relative-path"},"u":{"type":"string","maxLength":64,"format":"http-url"}`), nil)
	tests := []struct {
		prop, value string
		ok          bool
	}{
		{"p", "a/b.txt", true},
		{"p", ".", true},
		{"p", "a/./b", true},
		{"p", "a/../b", true},
		{"p", "a/", true},
		{"p", "..a/b", true},
		{"p", "%2e%2e/x", true},       // taken literally: a directory named %2e%2e
		{"p", "\uff0e\uff0e/x", true}, // full-width dots are a name, not ..
		{"p", "C:/x", true},           // a relative name on Linux
		{"p", "", false},
		{"p", "..", false},
		{"p", "../x", false},
		{"p", "a/../../x", false},
		{"p", "./../x", false},
		{"p", "a/b/../../..", false},
		{"p", "/etc/passwd", false},
		{"p", "//x", false},
		{"p", "a\x00b", false},
		{"p", `a\b`, false},
		{"p", `..\x`, false},
		{"p", strings.Repeat("a", 65), false}, // the schema's maxLength bounds it
		{"u", "https://example.com/a?b=1", true},
		{"u", "http://example.com", true},
		{"u", "HTTP://example.com:8080/x#f", true},
		{"u", "http://[::1]/", true},
		{"u", "ftp://x", false},
		{"u", "http://user@h/", false},
		{"u", "http://user:pw@h/", false},
		{"u", "http://@h/", false},
		{"u", "http:///nohost", false},
		{"u", "http://:80/", false},
		{"u", "http:example.com", false},
		{"u", "//example.com/a", false},
		{"u", "/a/b", false},
		{"u", "example.com", false},
		{"u", "javascript:alert(1)", false},
		{"u", "http://exa mple.com/", false},
		{"u", "http://example.com/\n", false},
		{"u", "http://example.com/\x7f", false},
		{"u", "http://example.com/\u00a0", false},
		{"u", "http://example.com:port/", false},
		{"u", "", false},
	}
	for _, tt := range tests {
		args, _ := json.Marshal(map[string]string{tt.prop: tt.value})
		e := s.Validate(args)
		switch {
		case tt.ok && e != nil:
			t.Errorf("%s %q: %v, want valid", tt.prop, tt.value, e)
		case !tt.ok && e == nil:
			t.Errorf("%s %q: valid, want a violation", tt.prop, tt.value)
		case !tt.ok && !slices.Equal(pointers(e), []string{"/" + tt.prop}):
			t.Errorf("%s %q: pointers %q, want [/%s]", tt.prop, tt.value, pointers(e), tt.prop)
		}
	}
	// A format judges strings only; other types are the type keyword's.
	for _, v := range []any{nil, 1, true, []any{}} {
		if validateRelativePath(v) != nil || validateHTTPURL(v) != nil {
			t.Errorf("format of %v: want nil for a non-string", v)
		}
	}
}

// TestKnownFormatsAssert keeps knownFormats honest: every name CheckBounded
// lets through is asserted by the compiled schema.
func TestKnownFormatsAssert(t *testing.T) {
	bad := map[string]string{
		"relative-path": "../x", "http-url": "ftp://x",
		"date-time": "x", "date": "2024-13-01", "time": "25:00", "duration": "x", "period": "x",
		"email": "x", "hostname": "-x-", "ipv4": "1.2.3", "ipv6": "x",
		"uri": "x", "uri-reference": "http://[", "iri": "x", "iri-reference": "http://[", "uri-template": "{",
		"uuid": "x", "json-pointer": "x", "relative-json-pointer": "x", "regex": "(", "semver": "x",
	}
	for name := range knownFormats {
		value, ok := bad[name]
		if !ok {
			t.Errorf("format %q: no bad value to test it with", name)
			continue
		}
		s, err := Compile("t", json.RawMessage(obj(`"v":{"type":"string","maxLength":99,"format":"`+name+`"}`)), nil)
		if err != nil {
			t.Errorf("format %q: %v", name, err)
			continue
		}
		args, _ := json.Marshal(map[string]string{"v": value})
		if e := s.Validate(args); e == nil {
			t.Errorf("format %q accepts %q: it asserts nothing", name, value)
		}
	}
}

func TestDecodeDepthBoundary(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	if _, err := decodeJSON([]byte(nest(MaxDepth)), argLimits); err != nil {
		t.Errorf("depth %d: %v, want accepted", MaxDepth, err)
	}
	if _, err := decodeJSON([]byte(nest(MaxDepth+1)), argLimits); err == nil || !strings.Contains(err.Msg, "MaxDepth") {
		t.Errorf("depth %d: %v, want refused naming MaxDepth", MaxDepth+1, err)
	}
}

func TestDecodeValues(t *testing.T) {
	v, err := decodeJSON([]byte(`{"a":[1,"s",true,null,{"b":-2.5e3}],"c":{}}`), argLimits)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(v)
	if want := `{"a":[1,"s",true,null,{"b":-2.5e3}],"c":{}}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestComparePointers(t *testing.T) {
	sorted := []string{"", "/a", "/a/2", "/a/10", "/a/10/x", "/a/b", "/b", "/items/9", "/items/10"}
	got := slices.Clone(sorted)
	slices.Reverse(got)
	slices.SortFunc(got, comparePointers)
	if !slices.Equal(got, sorted) {
		t.Errorf("got %q, want %q", got, sorted)
	}
}

func TestPointerEscaping(t *testing.T) {
	s := mustCompile(t, `{"type":"object","additionalProperties":false}`, nil)
	e := s.Validate(json.RawMessage(`{"a/b~c":1}`))
	if e == nil || !slices.Equal(pointers(e), []string{"/a~1b~0c"}) {
		t.Errorf("got %+v, want the pointer /a~1b~0c", e)
	}
}

func TestDoc(t *testing.T) {
	doc := json.RawMessage(toolSchema)
	s := mustCompile(t, toolSchema, nil)
	got := s.Doc()
	if string(got) != toolSchema {
		t.Errorf("Doc() is not the schema as given")
	}
	got[0] = 'X'
	doc[1] = 'X'
	if string(s.Doc()) != toolSchema {
		t.Errorf("Doc() shares memory with its caller")
	}
	if s.Name() != "read_file" {
		t.Errorf("Name() = %q", s.Name())
	}
}

func TestZeroSchemaRefuses(t *testing.T) {
	for _, s := range []*Schema{nil, {}} {
		if e := s.Validate(json.RawMessage(`{}`)); e == nil || e.Code != tool.CodeInternal {
			t.Errorf("Validate on %#v = %+v, want internal_error", s, e)
		}
	}
}

func TestConcurrentValidate(t *testing.T) {
	s := mustCompile(t, toolSchema, nil)
	inputs := []string{`{"path":"a"}`, `{"path":"../a","limit":0}`, `{"path":"a","path":"b"}`, `{`}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				in := inputs[(g+i)%len(inputs)]
				e := s.Validate(json.RawMessage(in))
				if (e == nil) != (in == inputs[0]) {
					t.Errorf("Validate(%s) = %v", in, e)
					return
				}
			}
		})
	}
	wg.Wait()
}
