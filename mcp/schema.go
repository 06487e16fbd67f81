package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"

	"airlock.dev/airlock/schema"
)

// What a client is shown of a tool's schema. The gate validates every
// call against the tool's full schema: JSON Schema 2020-12 with airlock's
// own formats (schema.FormatRelativePath, schema.FormatHTTPURL). Clients
// validate the arguments a model writes before they send them, with
// validators that refuse what they do not know: Ajv's default (draft-07)
// refuses the 2020-12 "$schema", and Ajv in strict mode refuses an unknown
// format. So a client is shown the same schema with only standard
// keywords: no "$schema", and each custom format replaced by a pattern
// that says what a regular expression can of it. The pattern is never
// stricter than the format (a call the gate takes is never refused by a
// client), and the gate still checks the whole format.

// Patterns standing in for the custom formats, in the syntax every
// client's validator takes (ECMA-262 without lookaround, which RE2 and
// Rust's regex also accept).
const (
	// relativePathPattern: not empty, no leading slash, no backslash or
	// NUL, and a first segment other than "..". What it cannot say
	// ("a/../.." leaves the root) the gate's format does.
	relativePathPattern = `^(\.|\.?[^./\\\x00][^/\\\x00]*|\.\.[^/\\\x00]+)(/[^\\\x00]*)?$`
	// httpURLPattern: http or https, "//", a host part without user
	// information or white space, then anything without white space.
	httpURLPattern = `^[Hh][Tt][Tt][Pp][Ss]?://[^/?#@\s]+([/?#]\S*)?$`
)

// formatPatterns maps each custom format to its pattern.
var formatPatterns = map[string]string{
	schema.FormatRelativePath: relativePathPattern,
	schema.FormatHTTPURL:      httpURLPattern,
}

// clientSchema returns the schema shown to clients for a tool's schema.
func clientSchema(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // bounds stay exactly as written
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("mcp: the tool's schema is not a JSON object: %w", err)
	}
	delete(doc, "$schema")
	standardize(doc)
	return json.Marshal(doc)
}

// standardize replaces, in place, every custom format of a schema and its
// subschemas by its pattern. A format without a pattern here is standard
// and stays.
func standardize(v any) {
	switch x := v.(type) {
	case map[string]any:
		if f, ok := x["format"].(string); ok {
			if p, custom := formatPatterns[f]; custom {
				delete(x, "format")
				if old, has := x["pattern"]; has {
					// Both must hold, and a schema has one pattern.
					x["allOf"] = append(asList(x["allOf"]), map[string]any{"pattern": old})
				}
				x["pattern"] = p
			}
		}
		for _, e := range x {
			standardize(e)
		}
	case []any:
		for _, e := range x {
			standardize(e)
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
