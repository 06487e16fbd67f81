package schema

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// MaxSchemaBytes bounds the size of a schema document given to Compile or
// CheckBounded.
const MaxSchemaBytes = 1 << 20

// MaxSchemaValues bounds how many JSON values a schema document holds.
const MaxSchemaValues = 1 << 18

// Draft202012 is the only dialect a schema may declare in "$schema"; a
// schema without "$schema" is read as this draft. The bound checks are
// written for its keywords.
const Draft202012 = "https://json-schema.org/draft/2020-12/schema"

// UnboundedError says where a schema fails to bound what it accepts and
// why. Pointer is the RFC 6901 JSON pointer of the offending place inside
// the schema document ("" for the document itself).
type UnboundedError struct {
	Pointer string
	Reason  string
}

func (e *UnboundedError) Error() string {
	if e.Pointer == "" {
		return "top level: " + e.Reason
	}
	return e.Pointer + ": " + e.Reason
}

// CheckBounded reports whether doc is a bounded schema, the only kind
// Compile accepts. A bounded schema lets through only arguments of bounded
// shape and size:
//
//   - the top level is "type": "object";
//   - every object schema has "additionalProperties": false, or
//     "unevaluatedProperties": false with no additionalProperties;
//     additionalProperties and unevaluated* are never schemas, and
//     patternProperties needs maxProperties;
//   - every string schema has maxLength, every array maxItems and items,
//     every number or integer a lower (minimum or exclusiveMinimum) and an
//     upper (maximum or exclusiveMaximum) bound;
//   - a schema with enum or const is bounded by it, one with $ref by its
//     target, one without type by anyOf, oneOf or allOf whose every branch
//     is bounded; anything else (a property without a type, true, {}) is
//     unconstrained and refused;
//   - every $ref is a JSON pointer inside the document ("#",
//     "#/$defs/name", ...) to a schema that is itself bounded, and no
//     chain of $ref and applicators loops back without descending into
//     the arguments;
//   - "$schema", if present, is draft 2020-12; "$id" appears only at the
//     top; $dynamicRef and $recursiveRef are refused; every "format" is
//     one the validator asserts.
//
// The error is an *UnboundedError naming the first problem found.
func CheckBounded(doc json.RawMessage) error {
	v, err := decodeSchema(doc)
	if err != nil {
		return err
	}
	return checkBounded(v)
}

// decodeSchema decodes a schema document with the decoder's limits.
func decodeSchema(doc json.RawMessage) (any, error) {
	if len(doc) > MaxSchemaBytes {
		return nil, fmt.Errorf("schema of %d bytes is larger than %d (MaxSchemaBytes)", len(doc), MaxSchemaBytes)
	}
	v, derr := decodeJSON(doc, schemaLimits)
	if derr != nil {
		if derr.Pointer != "" {
			return nil, fmt.Errorf("schema is not acceptable JSON: %s: %v", derr.Pointer, derr)
		}
		return nil, fmt.Errorf("schema is not acceptable JSON: %v", derr)
	}
	return v, nil
}

// walker checks one schema document.
type walker struct {
	err     *UnboundedError
	bounded map[string]bool     // pointers of schemas checked as bounded
	refs    []schemaRef         // every $ref, resolved once the walk is done
	same    map[string][]string // schema -> schemas applied to the same instance
}

type schemaRef struct {
	at     string // pointer of the schema holding the $ref
	target string // pointer the $ref names
}

func checkBounded(v any) error {
	root, ok := v.(map[string]any)
	if !ok {
		return &UnboundedError{Reason: `the schema must be an object with "type": "object"`}
	}
	if t, _ := root["type"].(string); t != "object" {
		return &UnboundedError{Reason: `want "type": "object": arguments are always an object`}
	}
	w := &walker{bounded: map[string]bool{}, same: map[string][]string{}}
	w.schema("", root, true)
	if w.err != nil {
		return w.err
	}
	for _, r := range w.refs {
		if !w.bounded[r.target] {
			return &UnboundedError{Pointer: r.at + "/$ref",
				Reason: fmt.Sprintf("$ref to %q, which is not a bounded schema of this document (use #/$defs/name)", "#"+r.target)}
		}
		w.same[r.at] = append(w.same[r.at], r.target)
	}
	return w.cycle()
}

func (w *walker) fail(ptr, format string, args ...any) {
	if w.err == nil {
		w.err = &UnboundedError{Pointer: ptr, Reason: fmt.Sprintf(format, args...)}
	}
}

// schema checks the schema v at ptr. needBound says whether v alone must
// bound the value it applies to: true for a property, item or $defs
// entry; false for an applicator that only narrows a value its parent has
// already bounded (not, if/then/else, contains, ...).
func (w *walker) schema(ptr string, v any, needBound bool) {
	if w.err != nil {
		return
	}
	switch s := v.(type) {
	case bool:
		if s && needBound {
			w.fail(ptr, "unconstrained schema (true): give it a type with bounds, an enum or a const")
			return
		}
		if needBound {
			w.bounded[ptr] = true
		}
		return
	case map[string]any:
		w.object(ptr, s, needBound)
	default:
		w.fail(ptr, "a schema must be an object or a boolean")
	}
}

func (w *walker) object(ptr string, s map[string]any, needBound bool) {
	w.keywords(ptr, s)
	if w.err != nil {
		return
	}
	by := boundsOf(s)
	hasEnum, hasConst, hasRef, hasType, combinators := by.enum, by.constant, by.ref, by.typ, by.combinators
	switch {
	case !needBound:
	case hasEnum || hasConst, hasRef:
		// Bounded by the listed values or by the $ref's target.
	case hasType:
		w.types(ptr, s)
	case combinators:
		// Bounded only if every branch is; the branches are walked with
		// needBound below.
	default:
		w.fail(ptr, "unconstrained schema: give it a type with bounds, an enum or a const")
	}
	if w.err != nil {
		return
	}
	if needBound {
		w.bounded[ptr] = true
	}
	// A node bounded by nothing else leans on its combinators' branches.
	branchBound := needBound && !hasEnum && !hasConst && !hasRef && !hasType && combinators

	// Subschemas that describe other values: each must bound its own.
	w.each(ptr, s, "properties", true)
	w.each(ptr, s, "patternProperties", true)
	w.each(ptr, s, "$defs", true)
	w.list(ptr, s, "prefixItems", true, false)
	if it, ok := s["items"]; ok {
		if _, isList := it.([]any); isList {
			w.fail(ptr+"/items", "items must be one schema in draft 2020-12; use prefixItems for a tuple")
			return
		}
		w.schema(ptr+"/items", it, true)
	}
	// Applicators to the same value: they narrow it.
	w.list(ptr, s, "allOf", branchBound, true)
	w.list(ptr, s, "anyOf", branchBound, true)
	w.list(ptr, s, "oneOf", branchBound, true)
	for _, k := range []string{"not", "if", "then", "else"} {
		if sub, ok := s[k]; ok {
			w.schema(ptr+"/"+k, sub, false)
			w.same[ptr] = append(w.same[ptr], ptr+"/"+k)
		}
	}
	if deps, ok := s["dependentSchemas"].(map[string]any); ok {
		for _, k := range sortedKeys(deps) {
			p := ptr + "/dependentSchemas/" + escape(k)
			w.schema(p, deps[k], false)
			w.same[ptr] = append(w.same[ptr], p)
		}
	}
	// Applicators to parts of the value (items, keys): they narrow them.
	for _, k := range []string{"contains", "propertyNames", "contentSchema"} {
		if sub, ok := s[k]; ok {
			w.schema(ptr+"/"+k, sub, false)
		}
	}
}

// bounders says which keywords of a schema object may bound its value.
type bounders struct {
	enum, constant, ref, typ bool
	combinators              bool // anyOf, oneOf or allOf
}

func boundsOf(s map[string]any) bounders {
	var b bounders
	_, b.enum = s["enum"]
	_, b.constant = s["const"]
	_, b.ref = s["$ref"]
	_, b.typ = s["type"]
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if _, ok := s[k]; ok {
			b.combinators = true
		}
	}
	return b
}

// keywords checks what must hold of any schema object, bounded or not.
func (w *walker) keywords(ptr string, s map[string]any) {
	if v, ok := s["$schema"]; ok {
		str, _ := v.(string)
		if ptr != "" {
			w.fail(ptr+"/$schema", "$schema may appear only at the top level")
		} else if strings.TrimSuffix(str, "#") != Draft202012 {
			w.fail("/$schema", "unsupported $schema %q: want %s", str, Draft202012)
		}
	}
	if _, ok := s["$id"]; ok && ptr != "" {
		w.fail(ptr+"/$id", "$id may appear only at the top level, so that every $ref resolves inside this document")
	}
	for _, k := range []string{"$dynamicRef", "$recursiveRef"} {
		if _, ok := s[k]; ok {
			w.fail(ptr+"/"+k, "%s is not supported; use $ref to #/$defs/name", k)
		}
	}
	for _, k := range []string{"additionalProperties", "unevaluatedProperties", "unevaluatedItems"} {
		if v, ok := s[k]; ok && v != false {
			w.fail(ptr+"/"+k, "%s must be false: arguments may not carry unlisted values", k)
		}
	}
	if _, ok := s["patternProperties"]; ok {
		if _, ok := s["maxProperties"]; !ok {
			w.fail(ptr, "object with patternProperties but without maxProperties")
		}
	}
	if v, ok := s["format"]; ok {
		if f, _ := v.(string); !knownFormats[f] {
			w.fail(ptr+"/format", "unknown format %q: it would assert nothing", f)
		}
	}
	if v, ok := s["$ref"]; ok {
		ref, _ := v.(string)
		target, ok := refPointer(ref)
		if !ok {
			w.fail(ptr+"/$ref", "$ref %q: only references inside this schema are allowed (#/$defs/name)", ref)
			return
		}
		w.refs = append(w.refs, schemaRef{at: ptr, target: target})
	}
}

// types checks the bounds the schema's types call for.
func (w *walker) types(ptr string, s map[string]any) {
	names, ok := typeNames(s["type"])
	if !ok {
		w.fail(ptr+"/type", "type must be a string or a list of strings")
		return
	}
	if len(names) == 0 {
		w.fail(ptr+"/type", "type must be a string or a non-empty list of strings")
		return
	}
	for _, name := range names {
		switch name {
		case "object":
			if s["additionalProperties"] != false && s["unevaluatedProperties"] != false {
				w.fail(ptr, "object without \"additionalProperties\": false")
			}
		case "array":
			if !isNumber(s["maxItems"]) {
				w.fail(ptr, "array without maxItems")
			} else if _, ok := s["items"]; !ok {
				w.fail(ptr, "array without items: every element needs a bounded schema (or items: false after prefixItems)")
			}
		case "string":
			if !isNumber(s["maxLength"]) {
				w.fail(ptr, "string without maxLength")
			}
		case "number", "integer":
			if !isNumber(s["minimum"]) && !isNumber(s["exclusiveMinimum"]) {
				w.fail(ptr, "%s without minimum or exclusiveMinimum", name)
			} else if !isNumber(s["maximum"]) && !isNumber(s["exclusiveMaximum"]) {
				w.fail(ptr, "%s without maximum or exclusiveMaximum", name)
			}
		case "boolean", "null":
		default:
			w.fail(ptr+"/type", "unknown type %q", name)
		}
	}
}

// typeNames reads the value of "type": one name or a list of names. ok
// is false when a list holds something other than a string.
func typeNames(v any) (names []string, ok bool) {
	switch t := v.(type) {
	case string:
		return []string{t}, true
	case []any:
		for _, n := range t {
			str, isString := n.(string)
			if !isString {
				return nil, false
			}
			names = append(names, str)
		}
	}
	return names, true
}

// each walks the schemas of an object-valued keyword.
func (w *walker) each(ptr string, s map[string]any, kw string, needBound bool) {
	v, ok := s[kw]
	if !ok {
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		w.fail(ptr+"/"+kw, "%s must be an object of schemas", kw)
		return
	}
	for _, k := range sortedKeys(m) {
		w.schema(ptr+"/"+kw+"/"+escape(k), m[k], needBound)
	}
}

// list walks the schemas of an array-valued keyword; same says they apply
// to the same value as the schema holding them.
func (w *walker) list(ptr string, s map[string]any, kw string, needBound, same bool) {
	v, ok := s[kw]
	if !ok {
		return
	}
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		w.fail(ptr+"/"+kw, "%s must be a non-empty list of schemas", kw)
		return
	}
	for i, sub := range a {
		p := fmt.Sprintf("%s/%s/%d", ptr, kw, i)
		w.schema(p, sub, needBound)
		if same {
			w.same[ptr] = append(w.same[ptr], p)
		}
	}
}

// cycle refuses a loop of $ref and same-value applicators: validating it
// would never descend into the arguments.
func (w *walker) cycle() error {
	const (
		active = iota + 1
		done
	)
	state := map[string]int{}
	var visit func(p string) (string, bool)
	visit = func(p string) (string, bool) {
		switch state[p] {
		case active:
			return p, true
		case done:
			return "", false
		}
		state[p] = active
		for _, q := range w.same[p] {
			if c, loop := visit(q); loop {
				return c, true
			}
		}
		state[p] = done
		return "", false
	}
	for _, p := range sortedKeys(w.same) {
		if c, loop := visit(p); loop {
			return &UnboundedError{Pointer: c, Reason: "$ref loop that never descends into the arguments"}
		}
	}
	return nil
}

// refPointer turns a $ref of the form "#" or "#/json/pointer" (percent
// encoded, as in a URI fragment) into the JSON pointer it names.
func refPointer(ref string) (string, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return "", false
	}
	p, err := url.PathUnescape(frag)
	if err != nil || (p != "" && !strings.HasPrefix(p, "/")) {
		return "", false
	}
	return p, true
}

func isNumber(v any) bool {
	_, ok := v.(json.Number)
	return ok
}

func escape(token string) string {
	var b strings.Builder
	escapeToken(&b, token)
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
