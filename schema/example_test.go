package schema_test

import (
	"encoding/json"
	"fmt"

	"airlock.dev/airlock/schema"
)

func Example() {
	s, err := schema.Compile("read_file", json.RawMessage(`{
		"type": "object",
		"additionalProperties": false,
		"required": ["path"],
		"properties": {
			"path":  {"type": "string", "maxLength": 4096, "format": "relative-path"},
			"limit": {"type": "integer", "minimum": 1, "maximum": 1000}
		}
	}`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Validate(json.RawMessage(`{"path":"notes/todo.txt","limit":20}`)) == nil)

	e := s.Validate(json.RawMessage(`{"path":"../secrets","limit":0,"all":true}`))
	fmt.Println(e.Code)
	for _, v := range e.Violations {
		fmt.Printf("%s: %s\n", v.Pointer, v.Message)
	}
	// Output:
	// true
	// invalid_arguments
	// /all: unknown property: the schema does not list it
	// /limit: 0 is less than the minimum 1
	// /path: not a valid relative-path: the path leaves the workspace root (..)
}

func ExampleCheckBounded() {
	err := schema.CheckBounded(json.RawMessage(`{
		"type": "object",
		"additionalProperties": false,
		"properties": {"query": {"type": "string"}}
	}`))
	fmt.Println(err)
	// Output:
	// /properties/query: string without maxLength
}

func ExampleBound() {
	// The input schema of an upstream MCP server's tool, as zod emits it:
	// draft-07, no bounds, open to unlisted keys.
	upstream := json.RawMessage(`{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"type": "object",
		"properties": {"path": {"type": "string"}, "head": {"type": "number"}},
		"required": ["path"]
	}`)
	doc, err := schema.Bound(upstream, &schema.Bounds{MaxString: 8})
	if err != nil {
		fmt.Println("tool hidden:", err)
		return
	}
	s, err := schema.Compile("read_file", doc, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Validate(json.RawMessage(`{"path":"a.txt","head":10,"extra":true}`)) == nil)
	for _, args := range []string{`{"head":10}`, `{"path":"a-long-name.txt"}`} {
		fmt.Println(s.Validate(json.RawMessage(args)).Violations[0].Message)
	}
	// Output:
	// true
	// required property is missing
	// too long: 15 characters, want at most 8 (maxLength)
}
