package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"airlock.dev/airlock/tool"
)

// upstreamTool is one entry of a testdata/upstream file.
type upstreamTool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// loadUpstream reads every testdata/upstream file, keyed "file/tool".
func loadUpstream(t testing.TB) map[string]json.RawMessage {
	t.Helper()
	files, err := filepath.Glob("testdata/upstream/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/upstream files (%v)", err)
	}
	out := map[string]json.RawMessage{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tools []upstreamTool
		if err := json.Unmarshal(data, &tools); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tl := range tools {
			out[strings.TrimSuffix(filepath.Base(f), ".json")+"/"+tl.Name] = tl.InputSchema
		}
	}
	return out
}

// boundCompiled bounds doc with b and compiles the result, failing the
// test on any error.
func boundCompiled(t *testing.T, name string, doc json.RawMessage, b *Bounds) *Schema {
	t.Helper()
	out, err := Bound(doc, b)
	if err != nil {
		t.Fatalf("Bound(%s) = %v", name, err)
	}
	if err := CheckBounded(out); err != nil {
		t.Fatalf("Bound(%s) gave a schema CheckBounded refuses: %v\n%s", name, err, out)
	}
	s, err := Compile(name, out, nil)
	if err != nil {
		t.Fatalf("Compile(Bound(%s)) = %v\n%s", name, err, out)
	}
	return s
}

// TestBoundEveryUpstreamTool bounds every schema in testdata/upstream:
// each must come out bounded and compiled, the same bytes twice, with its
// input unchanged.
func TestBoundEveryUpstreamTool(t *testing.T) {
	tools := loadUpstream(t)
	if len(tools) < 40 {
		t.Fatalf("only %d upstream tools in testdata; the real servers' lists are missing", len(tools))
	}
	for _, name := range sortedKeys(tools) {
		doc := tools[name]
		before := bytes.Clone(doc)
		s := boundCompiled(t, name, doc, nil)
		if !bytes.Equal(doc, before) {
			t.Errorf("Bound(%s) changed its input", name)
		}
		again, err := Bound(doc, nil)
		if err != nil || !bytes.Equal(again, s.Doc()) {
			t.Errorf("Bound(%s) is not deterministic:\n%s\n%s", name, s.Doc(), again)
		}
		// A bounded schema is a fixed point, give or take nothing.
		twice, err := Bound(s.Doc(), nil)
		if err != nil || !bytes.Equal(twice, s.Doc()) {
			t.Errorf("Bound(Bound(%s)) = %v, want the same schema:\n%s\n%s", name, err, s.Doc(), twice)
		}
	}
}

// TestBoundUpstreamArguments checks that what the upstream schema accepts
// passes, and that what breaks its own constraints is refused.
func TestBoundUpstreamArguments(t *testing.T) {
	tools := loadUpstream(t)
	tests := []struct {
		tool   string
		accept []string
		refuse []string // each must be invalid_arguments
	}{
		{"everything/echo",
			[]string{`{"message":"hi"}`, `{"message":"","extra":{"any":[1,"x",null]}}`},
			[]string{`{}`, `{"message":3}`, `{"message":null}`}},
		{"everything/get-annotated-message",
			[]string{`{"messageType":"error"}`, `{"messageType":"debug","includeImage":true}`},
			[]string{`{"messageType":"warning"}`, `{"messageType":"error","includeImage":"yes"}`}},
		{"everything/get-sum",
			[]string{`{"a":1,"b":-2.5}`, `{"a":1e300,"b":0}`},
			[]string{`{"a":1}`, `{"a":"1","b":2}`, `{"a":1e309,"b":0}`}},
		{"everything/get-resource-links",
			[]string{`{}`, `{"count":10}`},
			[]string{`{"count":0}`, `{"count":11}`}},
		{"everything/gzip-file-as-resource",
			[]string{`{"data":"https://example.com/a.md","outputType":"resource"}`},
			[]string{`{"data":"not a uri"}`, `{"outputType":"file"}`}},
		{"everything/get-env", []string{`{}`, `{"x":1}`}, []string{`{"x":{"a":{"b":1e400}}}`}},
		{"filesystem/write_file",
			[]string{`{"path":"/tmp/a","content":"x"}`},
			[]string{`{"path":"/tmp/a"}`, `{"path":["a"],"content":"x"}`}},
		{"filesystem/read_multiple_files",
			[]string{`{"paths":["a","b"]}`},
			[]string{`{"paths":[]}`, `{"paths":[1]}`, `{"paths":"a"}`}},
		{"filesystem/edit_file",
			[]string{`{"path":"a","edits":[{"oldText":"x","newText":"y"}],"dryRun":true}`, `{"path":"a","edits":[]}`},
			[]string{`{"path":"a","edits":[{"oldText":"x"}]}`, `{"path":"a","edits":[{"oldText":1,"newText":"y"}]}`}},
		{"filesystem/list_directory_with_sizes",
			[]string{`{"path":".","sortBy":"size"}`},
			[]string{`{"path":".","sortBy":"date"}`}},
		{"memory/create_entities",
			[]string{`{"entities":[{"name":"a","entityType":"person","observations":["x"]}]}`},
			[]string{`{"entities":[{"name":"a","entityType":"person"}]}`, `{"entities":[{"name":"a","entityType":"p","observations":[1]}]}`}},
		{"sequential-thinking/sequentialthinking",
			[]string{`{"thought":"t","nextThoughtNeeded":true,"thoughtNumber":1,"totalThoughts":3}`,
				`{"thought":"t","nextThoughtNeeded":"true","thoughtNumber":2,"totalThoughts":3,"isRevision":false}`},
			[]string{`{"thought":"t","nextThoughtNeeded":1,"thoughtNumber":1,"totalThoughts":3}`,
				`{"thought":"t","nextThoughtNeeded":true,"thoughtNumber":0,"totalThoughts":3}`,
				`{"thought":"t","nextThoughtNeeded":true,"thoughtNumber":1.5,"totalThoughts":3}`}},
		{"shapes/fetch",
			[]string{`{"url":"https://example.com"}`, `{"url":"https://example.com","max_length":999999,"start_index":0,"raw":true}`},
			[]string{`{"url":""}`, `{"url":"https://example.com","max_length":0}`, `{"url":"https://example.com","max_length":1000000}`,
				`{"url":"https://example.com","start_index":-1}`}},
		{"shapes/create_issue",
			[]string{`{"title":"t"}`, `{"title":"t","labels":[{"name":"bug","color":null},{"name":"x","color":"red"}],"priority":"high","meta":{"k":"v"},"extra":[1,{"a":"b"}]}`},
			[]string{`{"title":"t","priority":"urgent"}`, `{"title":"t","labels":[{"color":"red"}]}`,
				`{"title":"t","labels":[{"name":"a","color":3}]}`, `{"title":"t","meta":{"k":1}}`}},
		{"shapes/search",
			[]string{`{"query":"q","filters":{"a":["x"]},"sort":{"field":"name"},"secondarySort":{"field":"date","order":"desc"},"limit":100,"cursor":null,"range":[1,2]}`},
			[]string{`{"query":""}`, `{"query":"q","unknown":1}`, `{"query":"q","sort":{"field":"name","x":1}}`,
				`{"query":"q","secondarySort":{"field":"size"}}`, `{"query":"q","limit":0}`, `{"query":"q","range":[1,"2"]}`,
				`{"query":"q","range":[1,2,3]}`, `{"query":"q","filters":{"a":"x"}}`}},
		{"shapes/tree",
			[]string{`{"id":"3b241101-e2bb-4255-8caf-4136c566a962","node":{"name":"r","children":[{"name":"c","children":[]}]}}`},
			[]string{`{"id":"nope"}`, `{"node":{"name":"r"}}`, `{"id":"3b241101-e2bb-4255-8caf-4136c566a962","x":1}`,
				`{"id":"3b241101-e2bb-4255-8caf-4136c566a962","node":{"name":"r","children":[{"x":1}]}}`}},
		{"shapes/list_issues",
			[]string{`{"owner":"o","repo":"r","labels":null}`, `{"owner":"o","repo":"r","labels":["a"],"perPage":100,"state":"OPEN"}`},
			[]string{`{"owner":"o"}`, `{"owner":"o","repo":"r","perPage":101}`, `{"owner":"o","repo":"r","state":"open"}`, `{"owner":"o","repo":"r","labels":[1]}`}},
		{"shapes/go_struct",
			[]string{`{"name":"n","count":-3,"payload":{"any":["thing"]},"env":{"A":"1"}}`},
			[]string{`{"name":"n","other":1}`, `{"name":"n","count":1.5}`, `{"name":"n","env":{"A":1}}`}},
		{"shapes/legacy",
			[]string{`{"ratio":0.5,"color":"not checked","link":"../a","card":"c","billing":"b"}`, `{"shipping":{"zip":"1"},"card":"c","billing":"b"}`},
			[]string{`{"ratio":0}`, `{"ratio":1.5}`, `{"card":"c"}`, `{"shipping":{"zip":"1"}}`, `{"ratio":"1"}`}},
		{"shapes/no_arguments", []string{`{}`, `{"a":[1,2,{"b":null}]}`}, []string{`[]`}},
		{"shapes/empty", []string{`{}`, `{"a":"b"}`}, []string{`"x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			doc, ok := tools[tt.tool]
			if !ok {
				t.Fatalf("no tool %s in testdata/upstream", tt.tool)
			}
			s := boundCompiled(t, tt.tool, doc, nil)
			for _, args := range tt.accept {
				if e := s.Validate(json.RawMessage(args)); e != nil {
					t.Errorf("Validate(%s) = %s, want accepted\nschema: %s", args, e.Message, s.Doc())
				}
			}
			for _, args := range tt.refuse {
				e := s.Validate(json.RawMessage(args))
				if e == nil || e.Code != tool.CodeInvalidArguments {
					t.Errorf("Validate(%s) = %+v, want invalid_arguments\nschema: %s", args, e, s.Doc())
				}
			}
		})
	}
}

// TestBoundOverBounds checks that values past the bounds are refused,
// with small bounds and with the defaults.
func TestBoundOverBounds(t *testing.T) {
	tools := loadUpstream(t)
	small := &Bounds{MaxString: 4, MaxItems: 2, MaxProperties: 3}
	tests := []struct {
		tool   string
		b      *Bounds
		accept string
		refuse []string
	}{
		{"everything/echo", small, `{"message":"abcd"}`,
			[]string{`{"message":"abcde"}`, `{"message":"a","x":"abcde"}`, `{"message":"a","x":1,"y":2,"z":3}`, `{"message":"a","x":[1,2,3]}`}},
		{"filesystem/read_multiple_files", small, `{"paths":["a","b"]}`,
			[]string{`{"paths":["a","b","c"]}`, `{"paths":["abcde"]}`}},
		{"shapes/create_issue", small, `{"title":"t","meta":{"a":"b"}}`,
			[]string{`{"title":"t","meta":{"a":"b","c":"d","e":"f","g":"h"}}`, `{"title":"t","extra":{"a":{"b":[1,2,3]}}}`}},
		{"filesystem/write_file", nil, `{"path":"a","content":"` + strings.Repeat("é", UpstreamMaxString) + `"}`,
			[]string{`{"path":"a","content":"` + strings.Repeat("x", UpstreamMaxString+1) + `"}`}},
		{"everything/get-sum", nil, `{"a":-1.7976931348623157e308,"b":1.7976931348623157e308}`,
			[]string{`{"a":1.8e308,"b":0}`, `{"a":0,"b":-1.8e308}`}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			s := boundCompiled(t, tt.tool, tools[tt.tool], tt.b)
			if e := s.Validate(json.RawMessage(tt.accept)); e != nil {
				t.Errorf("Validate(%.80s) = %s, want accepted", tt.accept, e.Message)
			}
			for _, args := range tt.refuse {
				e := s.Validate(json.RawMessage(args))
				if e == nil || (e.Code != tool.CodeInvalidArguments && e.Code != tool.CodeArgumentsTooLarge) {
					t.Errorf("Validate(%.80s) = %+v, want refused as too large or invalid", args, e)
				}
			}
		})
	}
}

// TestBoundRewrites checks each rewrite on a small schema: what the
// result says, and what it accepts and refuses.
func TestBoundRewrites(t *testing.T) {
	tests := []struct {
		name   string
		doc    string
		want   []string // parts of the result
		absent []string // not in the result
		accept []string
		refuse []string
	}{
		{"smaller upstream bounds stay",
			`{"type":"object","properties":{"s":{"type":"string","maxLength":3},"a":{"type":"array","maxItems":1,"items":{"type":"integer","minimum":0,"maximum":9}}}}`,
			[]string{`"maxLength":3`, `"maxItems":1`}, nil,
			[]string{`{"s":"abc","a":[9]}`}, []string{`{"s":"abcd"}`, `{"a":[1,2]}`, `{"a":[10]}`}},
		{"larger upstream bounds come down",
			`{"type":"object","properties":{"s":{"type":"string","maxLength":1e9}}}`,
			[]string{`"maxLength":1048576`}, []string{`1e9`}, nil, nil},
		{"definitions and their refs",
			`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"p":{"$ref":"#/definitions/a~1b"}},"definitions":{"a/b":{"type":"string","enum":["x"]}}}`,
			[]string{`"$defs":{"a/b"`, `"$ref":"#/$defs/a~1b"`}, []string{`definitions`, `$schema`},
			[]string{`{"p":"x"}`}, []string{`{"p":"y"}`}},
		{"percent-encoded ref",
			`{"type":"object","properties":{"p":{"$ref":"#/definitions/a%20b"}},"definitions":{"a b":{"const":1}}}`,
			[]string{`"$ref":"#/$defs/a%20b"`}, nil, []string{`{"p":1}`}, []string{`{"p":2}`}},
		{"tuple items and additionalItems",
			`{"type":"object","properties":{"t":{"type":"array","items":[{"type":"string"},{"type":"boolean"}],"additionalItems":{"type":"integer"}}}}`,
			[]string{`"prefixItems"`}, []string{`additionalItems`},
			[]string{`{"t":["a",true,1,2]}`}, []string{`{"t":[1]}`, `{"t":["a",true,"x"]}`}},
		{"ref into a tuple",
			`{"type":"object","properties":{"t":{"type":"array","items":[{"type":"string","enum":["q"]}]},"u":{"$ref":"#/properties/t/items/0"}}}`,
			[]string{`"$ref":"#/properties/t/prefixItems/0"`}, nil, []string{`{"u":"q"}`}, []string{`{"u":"r"}`}},
		{"draft-04 exclusive bounds",
			`{"type":"object","properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":5,"exclusiveMaximum":false}}}`,
			[]string{`"exclusiveMinimum":0`, `"maximum":5`}, []string{`true`},
			[]string{`{"n":5}`, `{"n":0.1}`}, []string{`{"n":0}`, `{"n":5.1}`}},
		{"dependencies",
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"dependencies":{"a":["b"],"b":{"properties":{"a":{"const":"x"}}}}}`,
			[]string{`"dependentRequired"`, `"dependentSchemas"`}, []string{`"dependencies"`},
			[]string{`{"a":"x","b":"y"}`, `{}`}, []string{`{"a":"x"}`, `{"a":"z","b":"y"}`}},
		{"unknown format dropped, known kept",
			`{"type":"object","properties":{"c":{"type":"string","format":"color"},"d":{"type":"string","format":"date"},"p":{"type":"string","format":"relative-path"}}}`,
			[]string{`"format":"date"`}, []string{`color`, `relative-path`},
			[]string{`{"c":"anything","d":"2024-01-02","p":"/abs"}`}, []string{`{"d":"yesterday"}`}},
		{"record with only additionalProperties",
			`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"integer"}}}}`,
			[]string{`"patternProperties":{"":{"maximum"`}, nil,
			[]string{`{"m":{"a":1}}`}, []string{`{"m":{"a":"1"}}`}},
		{"additionalProperties schema beside properties",
			`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"integer"}}`,
			nil, nil, []string{`{"a":"x","b":1}`, `{"a":"x","b":"anything: the upstream checks"}`}, []string{`{"a":1}`}},
		{"closed object stays closed",
			`{"type":"object","properties":{"a":{"type":"boolean"}},"additionalProperties":false}`,
			nil, []string{`patternProperties`},
			[]string{`{"a":true}`}, []string{`{"b":true}`}},
		{"unevaluatedProperties false kept",
			`{"type":"object","allOf":[{"properties":{"a":{"type":"boolean"}}}],"unevaluatedProperties":false}`,
			[]string{`"unevaluatedProperties":false`}, nil,
			[]string{`{"a":true}`}, []string{`{"b":true}`}},
		{"unconstrained values",
			`{"type":"object","properties":{"t":true,"e":{},"d":{"description":"x"},"f":false,"m":{"minLength":2}}}`,
			[]string{`"f":false`, `"m":{"$ref":"#/$defs/airlock_any","minLength":2}`}, nil,
			[]string{`{"t":1,"e":[{}],"d":null,"m":7}`, `{"m":"ab"}`}, []string{`{"f":1}`, `{"m":"a"}`}},
		{"typed nested object without properties",
			`{"type":"object","properties":{"o":{"type":"object"}}}`, nil, nil,
			[]string{`{"o":{"a":{"b":[1]}}}`}, []string{`{"o":1}`}},
		{"anyOf branches bounded",
			`{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"array"},{}]}}}`, nil, nil,
			[]string{`{"x":"s"}`, `{"x":[1]}`, `{"x":null}`}, nil},
		{"oneOf with a loosened branch becomes anyOf",
			`{"type":"object","properties":{"x":{"oneOf":[{"type":"string","format":"color"},{"type":"string","maxLength":2}]}}}`,
			[]string{`"anyOf"`}, []string{`oneOf`}, []string{`{"x":"ab"}`}, []string{`{"x":1}`}},
		{"not kept when exact",
			`{"type":"object","properties":{"x":{"type":"string","not":{"enum":["root"]}}}}`,
			[]string{`"not"`}, nil, []string{`{"x":"a"}`}, []string{`{"x":"root"}`}},
		{"not dropped when loosened",
			`{"type":"object","properties":{"x":{"type":"string","not":{"format":"color"}}}}`,
			nil, []string{`"not"`}, []string{`{"x":"red"}`}, nil},
		{"if dropped when loosened",
			`{"type":"object","properties":{"x":{"type":"string"}},"if":{"properties":{"x":{"format":"color"}}},"then":{"required":["y"]}}`,
			nil, []string{`"if"`, `"then"`}, []string{`{"x":"red"}`}, nil},
		{"not over a loosened $ref dropped",
			`{"type":"object","properties":{"x":{"type":"string","not":{"$ref":"#/$defs/c"}}},"$defs":{"c":{"type":"string","format":"color"}}}`,
			nil, []string{`"not"`}, []string{`{"x":"red"}`}, nil},
		{"draft-07 $ref siblings ignored",
			`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"x":{"$ref":"#/definitions/s","maxLength":1,"description":"d"}},"definitions":{"s":{"type":"string"}}}`,
			[]string{`"description":"d"`}, []string{`"maxLength":1,`},
			[]string{`{"x":"long"}`}, []string{`{"x":1}`}},
		{"2020-12 $ref siblings applied",
			`{"type":"object","properties":{"x":{"$ref":"#/$defs/s","maxLength":1}},"$defs":{"s":{"type":"string"}}}`,
			nil, nil, []string{`{"x":"l"}`}, []string{`{"x":"long"}`}},
		{"top-level type list",
			`{"type":["object","null"],"properties":{"a":{"type":"null"}}}`, nil, nil,
			[]string{`{"a":null}`}, []string{`{"a":1}`}},
		{"top-level true", `true`, nil, nil, []string{`{"a":1}`}, nil},
		{"name taken",
			`{"type":"object","properties":{"a":{}},"$defs":{"airlock_any":{"const":1}}}`,
			[]string{`"$ref":"#/$defs/airlock_any_2"`}, nil, []string{`{"a":"x"}`}, nil},
		{"2019-09 schema", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","properties":{"a":{"type":"string"}}}`,
			nil, []string{`$schema`}, []string{`{"a":"x"}`}, []string{`{"a":1}`}},
		{"2020-12 schema", `{"$schema":"https://json-schema.org/draft/2020-12/schema#","type":"object"}`,
			nil, []string{`"$schema"`}, []string{`{}`}, nil},
		{"top-level $id dropped", `{"$id":"https://example.com/s.json","type":"object","properties":{"a":{"$ref":"#/$defs/b"}},"$defs":{"b":{"const":1}}}`,
			nil, []string{`$id`}, []string{`{"a":1}`}, []string{`{"a":2}`}},
		{"huge enum is its own bound",
			`{"type":"object","properties":{"e":{"enum":[` + strings.Repeat(`"v",`, 5000) + `"w"]}}}`, []string{`"e":{"enum":["v"`}, nil,
			[]string{`{"e":"w"}`}, []string{`{"e":"x"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := boundCompiled(t, tt.name, json.RawMessage(tt.doc), nil)
			got := string(s.Doc())
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("result lacks %s:\n%.2000s", w, got)
				}
			}
			for _, w := range tt.absent {
				if strings.Contains(got, w) {
					t.Errorf("result holds %s:\n%.2000s", w, got)
				}
			}
			for _, args := range tt.accept {
				if e := s.Validate(json.RawMessage(args)); e != nil {
					t.Errorf("Validate(%s) = %s, want accepted\nschema: %.2000s", args, e.Message, got)
				}
			}
			for _, args := range tt.refuse {
				if e := s.Validate(json.RawMessage(args)); e == nil {
					t.Errorf("Validate(%s) accepted, want refused\nschema: %.2000s", args, got)
				}
			}
		})
	}
}

// TestBoundRefuses checks what Bound refuses and that the error names
// the place.
func TestBoundRefuses(t *testing.T) {
	var props []string
	for i := range UpstreamMaxSchemas {
		props = append(props, fmt.Sprintf(`"p%05d":{}`, i))
	}
	many := `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 80) + `{}` + strings.Repeat(`}}`, 80)
	tests := []struct {
		name string
		doc  string
		ptr  string // the pointer an *UnboundedError must name; "-" for another error
		want string // a part of the message
	}{
		{"not JSON", `{"type":`, "-", "not acceptable JSON"},
		{"not an object", `[]`, "", "JSON object"},
		{"false", `false`, "", "accepts no arguments"},
		{"top-level string", `{"type":"string"}`, "/type", "always an object"},
		{"top-level type list without object", `{"type":["string","null"]}`, "/type", "always an object"},
		{"top-level type null", `{"type":null}`, "/type", "not a type name"},
		{"remote $ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "/properties/a/$ref", "outside the document"},
		{"relative $ref", `{"type":"object","properties":{"a":{"$ref":"other.json#/x"}}}`, "/properties/a/$ref", "outside the document"},
		{"anchor $ref", `{"type":"object","properties":{"a":{"$ref":"#name"}}}`, "/properties/a/$ref", "anchor"},
		{"$dynamicRef", `{"type":"object","properties":{"a":{"$dynamicRef":"#meta"}}}`, "/properties/a/$dynamicRef", "not supported"},
		{"$recursiveRef", `{"type":"object","properties":{"a":{"$recursiveRef":"#"}}}`, "/properties/a/$recursiveRef", "not supported"},
		{"nested $id", `{"type":"object","properties":{"a":{"$id":"x","type":"boolean"}}}`, "/properties/a/$id", "top level"},
		{"nested $schema", `{"type":"object","properties":{"a":{"$schema":"http://json-schema.org/draft-07/schema#"}}}`, "/properties/a/$schema", "top level"},
		{"unknown $schema", `{"$schema":"https://example.com/my-dialect","type":"object"}`, "/$schema", "unknown $schema"},
		{"name in definitions and $defs", `{"type":"object","definitions":{"a":{}},"$defs":{"a":{}}}`, "/definitions/a", "both"},
		{"dependencies not an object", `{"type":"object","dependencies":3}`, "/dependencies", "must be an object"},
		{"$ref loop", `{"type":"object","properties":{"x":{"$ref":"#/definitions/a"}},"definitions":{"a":{"$ref":"#/definitions/b"},"b":{"$ref":"#/definitions/a"}}}`, "-", "loop"},
		{"$ref to itself at the top", `{"type":"object","allOf":[{"$ref":"#"}]}`, "-", "loop"},
		{"dangling $ref", `{"type":"object","properties":{"x":{"$ref":"#/definitions/none"}}}`, "-", "not a bounded schema"},
		{"$ref into a dropped not", `{"type":"object","properties":{"x":{"type":"string","not":{"format":"color"}},"y":{"$ref":"#/properties/x/not"}}}`, "-", "not a bounded schema"},
		{"not a schema", `{"type":"object","properties":{"x":3}}`, "-", "object or a boolean"},
		{"bad pattern", `{"type":"object","properties":{"x":{"type":"string","pattern":"("}}}`, "-", "does not compile"},
		{"too deep", deep, "-", "MaxSchemaDepth"},
		{"too large", `{"type":"object","description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`, "-", "MaxSchemaBytes"},
		{"too many schemas", many, fmt.Sprintf("/properties/p%05d", UpstreamMaxSchemas-1), "UpstreamMaxSchemas"},
		{"too many values", `{"type":"object","enum":[` + strings.Repeat(`0,`, MaxSchemaValues) + `0]}`, "-", "MaxSchemaValues"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Bound(json.RawMessage(tt.doc), nil)
			if err == nil {
				t.Fatalf("Bound accepted it:\n%.300s", out)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to say %q", err, tt.want)
			}
			var ue *UnboundedError
			if tt.ptr != "-" && (!errors.As(err, &ue) || ue.Pointer != tt.ptr) {
				t.Errorf("error %#v, want an *UnboundedError at %q", err, tt.ptr)
			}
		})
	}
}

func TestBoundOptions(t *testing.T) {
	if _, err := Bound(json.RawMessage(`{"type":"object"}`), &Bounds{MaxItems: -1}); err == nil || !strings.Contains(err.Error(), "MaxItems") {
		t.Errorf("negative MaxItems: err = %v, want one naming it", err)
	}
	out, err := Bound(json.RawMessage(`{"type":"object","properties":{"s":{"type":"string"}}}`), &Bounds{MaxString: 7})
	if err != nil || !strings.Contains(string(out), `"maxLength":7`) || !strings.Contains(string(out), `"maxItems":8192`) {
		t.Errorf("Bounds{MaxString: 7} = %s, %v: want maxLength 7 and the default maxItems", out, err)
	}
}
