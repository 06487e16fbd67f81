package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Limits Bound puts on what an upstream tool's schema leaves open. They
// bound each value; the call as a whole stays under DefaultMaxArgBytes,
// MaxValues and MaxDepth, which Validate enforces whatever the schema.
const (
	// UpstreamMaxString is the maxLength, in characters, of a string the
	// upstream did not bound (or bounded higher): 1 Mi characters, the
	// text of a large source file, which is the biggest string MCP tools
	// commonly take (a file to write, a patch, a document to index).
	UpstreamMaxString = 1 << 20

	// UpstreamMaxItems is the maxItems of an array the upstream did not
	// bound (or bounded higher). 8192 covers lists of paths, entities or
	// the floats of an embedding; MaxValues caps the total anyway.
	UpstreamMaxItems = 1 << 13

	// UpstreamMaxProperties is the maxProperties of an object that takes
	// keys the upstream did not list (a map, an open object, a free-form
	// value): enough for headers, labels or environment variables.
	UpstreamMaxProperties = 1 << 10

	// UpstreamMaxNumber is the bound, either side, of a number the upstream
	// did not bound: the largest finite float64. The upstream reads JSON
	// numbers as doubles (JavaScript, Python's float, Go's float64), so
	// anything larger would be infinity there.
	UpstreamMaxNumber = "1.7976931348623157e308"

	// UpstreamMaxSchemas is how many schemas (the document and every
	// subschema in it) an upstream document may hold. The validator's
	// compile time grows faster than the count: about 0.15 s for 5000
	// string properties, 10 s for 20000, all within MaxSchemaBytes. Real
	// tools hold tens to a few hundred.
	UpstreamMaxSchemas = 1 << 12

	// UpstreamAnyDef is the $defs name Bound gives the one shared schema
	// of any JSON value within the bounds. Should the upstream use the
	// name itself, a numbered one ("airlock_any_2", ...) is taken.
	UpstreamAnyDef = "airlock_any"
)

// Bounds are the limits Bound adds to an upstream schema. A nil *Bounds,
// or a zero field, means the default: UpstreamMaxString,
// UpstreamMaxItems and UpstreamMaxProperties.
type Bounds struct {
	// MaxString is the longest string, in characters (maxLength).
	MaxString int
	// MaxItems is the longest array (maxItems).
	MaxItems int
	// MaxProperties is the most keys of an object whose keys the
	// upstream left open (maxProperties).
	MaxProperties int
}

// resolve fills in the defaults and refuses negative limits.
func (b *Bounds) resolve() (Bounds, error) {
	r := Bounds{UpstreamMaxString, UpstreamMaxItems, UpstreamMaxProperties}
	if b == nil {
		return r, nil
	}
	for _, f := range []struct {
		name string
		v    int
		dst  *int
	}{
		{"MaxString", b.MaxString, &r.MaxString},
		{"MaxItems", b.MaxItems, &r.MaxItems},
		{"MaxProperties", b.MaxProperties, &r.MaxProperties},
	} {
		switch {
		case f.v < 0:
			return r, fmt.Errorf("Bounds.%s is negative (%d): give a positive limit, or 0 for the default", f.name, f.v)
		case f.v > 0:
			*f.dst = f.v
		}
	}
	return r, nil
}

// olderDrafts are the "$schema" values Bound reads as an older draft and
// rewrites into draft 2020-12 (without the trailing "#", which is
// optional). 2019-09 differs from 2020-12 only in keywords Bound
// rewrites anyway (items as a list, $recursiveRef, which it refuses).
var olderDrafts = map[string]bool{
	"http://json-schema.org/draft-04/schema":       true,
	"http://json-schema.org/draft-06/schema":       true,
	"http://json-schema.org/draft-07/schema":       true,
	"https://json-schema.org/draft/2019-09/schema": true,
}

// beforeRefSiblings are the drafts in which a $ref makes its siblings be
// ignored (draft 2019-09 applies them, as 2020-12 does).
var beforeRefSiblings = map[string]bool{
	"http://json-schema.org/draft-04/schema": true,
	"http://json-schema.org/draft-06/schema": true,
	"http://json-schema.org/draft-07/schema": true,
}

// keptBesideRef are the keywords Bound keeps beside a $ref in a draft
// before 2019-09: annotations, and the definitions a $ref may point at.
var keptBesideRef = map[string]bool{
	"$ref": true, "definitions": true, "$defs": true, "$comment": true,
	"title": true, "description": true, "default": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true,
}

// Bound turns the input schema of an upstream MCP server's tool into a
// bounded schema (see CheckBounded) that Compile accepts. The result
// accepts every argument object the upstream schema accepts whose values
// stay within b (a nil b means the defaults), and refuses what the
// upstream schema refuses wherever the validator can say so:
//
//   - a string gets maxLength, an array maxItems and items, a number or
//     integer the bounds it lacks (±UpstreamMaxNumber); a larger
//     maxLength, maxItems or maxProperties comes down to b's;
//   - an object open to unlisted keys (additionalProperties absent or
//     true) gets "additionalProperties": false with patternProperties
//     {"": any value} and maxProperties, so the extra keys still pass,
//     bounded; additionalProperties as a schema becomes the schema of
//     every key when the object lists no keys, and any value otherwise
//     (the validator cannot say "every unlisted key": the upstream
//     validates its own arguments too);
//   - an unconstrained schema (true, {}, only a description) becomes a
//     $ref to one shared schema of any bounded JSON value in $defs
//     (UpstreamAnyDef); false stays false;
//   - draft-04, -06, -07 and 2019-09 documents are rewritten into 2020-12:
//     "$schema" dropped (every result is 2020-12), definitions into $defs (and each $ref with it),
//     items as a list into prefixItems (additionalItems into items),
//     boolean exclusiveMinimum/exclusiveMaximum into numbers,
//     dependencies into dependentRequired and dependentSchemas, and the
//     siblings of a $ref that those drafts ignore dropped;
//   - a format the validator does not assert is dropped, and so are
//     unevaluatedProperties and unevaluatedItems unless false: the result
//     then accepts more than the upstream's, never less. A "not" or an
//     "if" whose schema had to be loosened so is dropped with its
//     then/else, for the same reason.
//
// Bound refuses, with an *UnboundedError naming the JSON pointer, a $ref
// outside the document or to an anchor, $dynamicRef and $recursiveRef, a
// nested $id, an unknown "$schema", more than UpstreamMaxSchemas schemas,
// and a top level that is not an object
// schema; and with an error, a document over MaxSchemaBytes,
// MaxSchemaDepth or MaxSchemaValues and anything the result still fails
// CheckBounded or Compile on (the last step). Any error means the tool
// cannot be offered. Bound never changes doc, and the same doc and b give
// the same bytes.
func Bound(doc json.RawMessage, b *Bounds) (out json.RawMessage, err error) {
	defer func() {
		// Upstream schemas are untrusted input: a fault here must hide one
		// tool, not take the gateway down.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("bounding the upstream schema failed internally (%v); the tool stays hidden", r)
		}
	}()
	lim, err := b.resolve()
	if err != nil {
		return nil, err
	}
	v, err := decodeSchema(doc)
	if err != nil {
		return nil, err
	}
	root, err := topLevel(v)
	if err != nil {
		return nil, err
	}
	draft, err := dialect(root)
	if err != nil {
		return nil, err
	}
	bd := &bounder{lim: lim, src: root, oldRefs: beforeRefSiblings[draft]}
	bd.anyName = freeDefName(root)
	bd.anyRef = "#/$defs/" + bd.anyName
	res, loosened := bd.node("", root, true)
	if bd.err == nil && loosened && bd.refs > 0 {
		// A $ref may lead to a schema that was loosened; under a "not"
		// that would make the whole stricter. Walk again, taking every
		// $ref as loosened, so such a "not" is dropped instead.
		bd.refsLoosened, bd.usedAny, bd.refs, bd.schemas = true, false, 0, 0
		res, _ = bd.node("", root, true)
	}
	if bd.err != nil {
		return nil, bd.err
	}
	top := res.(map[string]any)
	if bd.usedAny {
		defs, _ := top["$defs"].(map[string]any)
		defs = cloneMap(defs)
		defs[bd.anyName] = bd.anySchema()
		top["$defs"] = defs
	}
	out, err = encode(top)
	if err != nil {
		return nil, err
	}
	// The last step is the real one: the result must be what Compile
	// takes, or the tool is not offered.
	w, err := decodeSchema(out)
	if err != nil {
		return nil, fmt.Errorf("bounded schema: %w", err)
	}
	if err := checkBounded(w); err != nil {
		return nil, fmt.Errorf("bounded schema is still not bounded: %w", err)
	}
	if _, err := compile("upstream", w); err != nil {
		return nil, fmt.Errorf("bounded schema does not compile: %w", err)
	}
	return out, nil
}

// topLevel checks the top of the document and returns a copy whose "type"
// is "object": tool arguments are always an object, so a missing type, or
// a list of types holding "object", says nothing more.
func topLevel(v any) (map[string]any, error) {
	var root map[string]any
	switch t := v.(type) {
	case bool:
		if !t {
			return nil, &UnboundedError{Reason: "the schema is false: it accepts no arguments, so the tool can never be called"}
		}
		root = map[string]any{}
	case map[string]any:
		root = cloneMap(t)
	default:
		return nil, &UnboundedError{Reason: "the input schema must be a JSON object with \"type\": \"object\""}
	}
	switch t := root["type"].(type) {
	case nil:
		if _, ok := root["type"]; ok {
			return nil, &UnboundedError{Pointer: "/type", Reason: "type null is not a type name; tool arguments are an object"}
		}
	case string:
		if t != "object" {
			return nil, &UnboundedError{Pointer: "/type", Reason: fmt.Sprintf("type %q: tool arguments are always an object", t)}
		}
	case []any:
		for _, n := range t {
			if n == "object" {
				root["type"] = "object"
				return root, nil
			}
		}
		return nil, &UnboundedError{Pointer: "/type", Reason: "no \"object\" among the types: tool arguments are always an object"}
	default:
		return nil, &UnboundedError{Pointer: "/type", Reason: "type must be a string or a list of strings"}
	}
	root["type"] = "object"
	return root, nil
}

// dialect checks and removes the top-level "$schema" and "$id", returning
// the draft named (without a trailing "#"), Draft202012 when none is.
// $id goes because every $ref Bound keeps is a pointer into the document
// itself, which needs no base.
func dialect(root map[string]any) (string, error) {
	delete(root, "$id")
	v, ok := root["$schema"]
	if !ok {
		return Draft202012, nil
	}
	s, _ := v.(string)
	d := strings.TrimSuffix(s, "#")
	if d != Draft202012 && !olderDrafts[d] {
		return "", &UnboundedError{Pointer: "/$schema",
			Reason: fmt.Sprintf("unknown $schema %q: Bound reads draft-04, -06, -07, 2019-09 and 2020-12", s)}
	}
	delete(root, "$schema")
	return d, nil
}

// freeDefName returns UpstreamAnyDef, or a numbered variant when the
// document's $defs or definitions use it.
func freeDefName(root map[string]any) string {
	taken := func(name string) bool {
		for _, k := range []string{"$defs", "definitions"} {
			if m, ok := root[k].(map[string]any); ok {
				if _, ok := m[name]; ok {
					return true
				}
			}
		}
		return false
	}
	name := UpstreamAnyDef
	for i := 2; taken(name); i++ {
		name = UpstreamAnyDef + "_" + strconv.Itoa(i)
	}
	return name
}

// bounder rewrites one upstream schema document.
type bounder struct {
	lim     Bounds
	src     map[string]any // the upstream document, for translating $ref
	oldRefs bool           // a draft in which $ref siblings are ignored
	anyName string
	anyRef  string
	usedAny bool
	err     *UnboundedError

	schemas      int  // schemas walked, for UpstreamMaxSchemas
	refs         int  // $refs seen
	refsLoosened bool // take every $ref as leading to a loosened schema
}

func (bd *bounder) fail(ptr, format string, args ...any) {
	if bd.err == nil {
		bd.err = &UnboundedError{Pointer: ptr, Reason: fmt.Sprintf(format, args...)}
	}
}

// any returns a new $ref to the shared schema of any bounded value.
func (bd *bounder) any() map[string]any {
	bd.usedAny = true
	return map[string]any{"$ref": bd.anyRef}
}

// anySchema is the shared schema of any JSON value within the bounds:
// every type at once, each with its bounds, so that it is one node (no
// anyOf to try branch by branch) and its violations read plainly.
func (bd *bounder) anySchema() map[string]any {
	return map[string]any{
		"description":          "Any JSON value within airlock's bounds: the upstream schema leaves this value open.",
		"type":                 []any{"object", "array", "string", "number", "boolean", "null"},
		"additionalProperties": false,
		"patternProperties":    map[string]any{"": map[string]any{"$ref": bd.anyRef}},
		"maxProperties":        json.Number(strconv.Itoa(bd.lim.MaxProperties)),
		"maxItems":             json.Number(strconv.Itoa(bd.lim.MaxItems)),
		"items":                map[string]any{"$ref": bd.anyRef},
		"maxLength":            json.Number(strconv.Itoa(bd.lim.MaxString)),
		"minimum":              json.Number("-" + UpstreamMaxNumber),
		"maximum":              json.Number(UpstreamMaxNumber),
	}
}

// node returns the bounded form of the schema v found at ptr, a pointer
// into the upstream document. needBound says whether v alone must bound
// its value, as in CheckBounded. loosened reports that the result accepts
// values v refuses (other than by the bounds): fine where the schema
// allows a value, but a "not" or an "if" holding it must go.
//
// The bounds added are the same everywhere, so inside a "not" or an "if"
// they change nothing for arguments that pass the rest of the schema,
// which bounds every value with them already.
func (bd *bounder) node(ptr string, v any, needBound bool) (res any, loosened bool) {
	if bd.err != nil {
		return v, false
	}
	if bd.schemas++; bd.schemas > UpstreamMaxSchemas {
		bd.fail(ptr, "more than %d schemas in the document (UpstreamMaxSchemas): compiling them would take too long", UpstreamMaxSchemas)
		return v, false
	}
	switch s := v.(type) {
	case bool:
		if s && needBound {
			return bd.any(), false
		}
		return s, false
	case map[string]any:
		return bd.object(ptr, s, needBound)
	default:
		// Not a schema: CheckBounded names it on the result.
		return v, false
	}
}

func (bd *bounder) object(ptr string, in map[string]any, needBound bool) (map[string]any, bool) {
	for _, k := range []string{"$dynamicRef", "$recursiveRef"} {
		if _, ok := in[k]; ok {
			bd.fail(ptr+"/"+k, "%s is not supported: only $ref to a place in the same document (#/$defs/name) is", k)
			return in, false
		}
	}
	if ptr != "" {
		for _, k := range []string{"$id", "$schema"} {
			if _, ok := in[k]; ok {
				bd.fail(ptr+"/"+k, "%s may appear only at the top level, so that every $ref resolves inside this document", k)
				return in, false
			}
		}
	}
	if r, ok := in["$ref"]; ok && r == bd.anyRef && len(in) == 1 {
		return in, false // the shared schema of any value, added here
	}
	s := cloneMap(in)
	loosened := false
	bd.upgrade(ptr, s)
	if bd.err != nil {
		return in, false
	}
	if ptr == "" {
		s["type"] = "object" // kept even beside a draft-07 $ref
	}
	if r, ok := s["$ref"]; ok {
		ref, _ := r.(string)
		target, ok := refPointer(ref)
		if !ok {
			bd.fail(ptr+"/$ref", "$ref %q points outside the document or to an anchor: only #/json/pointer references are followed", ref)
			return in, false
		}
		s["$ref"] = "#" + refFragment(translatePointer(bd.src, target))
		bd.refs++
		loosened = loosened || bd.refsLoosened
	}
	if f, ok := s["format"]; ok {
		if name, _ := f.(string); !upstreamFormat(name) {
			// The validator would assert nothing, and CheckBounded refuses
			// an unasserted format; the upstream checks its own.
			delete(s, "format")
			loosened = true
		}
	}
	for _, k := range []string{"unevaluatedProperties", "unevaluatedItems"} {
		if u, ok := s[k]; ok && u != false {
			// Only false is bounded; true says nothing, and a schema here
			// would be one the validator cannot take.
			delete(s, k)
			loosened = loosened || u != true
		}
	}
	loosened = bd.extraKeys(ptr, s) || loosened

	// Subschemas of other values: each must bound its own.
	for _, kw := range []string{"properties", "patternProperties", "$defs"} {
		loosened = bd.each(ptr, s, kw, true) || loosened
	}
	loosened = bd.list(ptr, s, "prefixItems", true) || loosened
	if it, ok := s["items"]; ok {
		var l bool
		s["items"], l = bd.node(ptr+"/items", it, true)
		loosened = loosened || l
	}
	by := boundsOf(s)
	hasEnum, hasConst, hasRef, hasType, combinators := by.enum, by.constant, by.ref, by.typ, by.combinators
	branchBound := needBound && !hasEnum && !hasConst && !hasRef && !hasType && combinators
	for _, kw := range []string{"allOf", "anyOf"} {
		loosened = bd.list(ptr, s, kw, branchBound) || loosened
	}
	if bd.list(ptr, s, "oneOf", branchBound) {
		// A loosened branch may now match a value another branch
		// matches, and oneOf would refuse it: say anyOf instead.
		loosened = true
		if _, ok := s["anyOf"]; !ok {
			s["anyOf"] = s["oneOf"]
		} else {
			all, _ := s["allOf"].([]any)
			s["allOf"] = append(slices.Clip(all), map[string]any{"anyOf": s["oneOf"]})
		}
		delete(s, "oneOf")
	}
	loosened = bd.each(ptr, s, "dependentSchemas", false) || loosened
	for _, kw := range []string{"then", "else", "contains", "propertyNames", "contentSchema"} {
		if sub, ok := s[kw]; ok {
			var l bool
			s[kw], l = bd.node(ptr+"/"+kw, sub, false)
			loosened = loosened || l
			if kw == "contains" && l {
				// More items may match now, past maxContains.
				delete(s, "maxContains")
			}
		}
	}
	// A loosened "not" would refuse what the upstream accepts, and a
	// loosened "if" would send values to the wrong branch: drop them,
	// which only loosens this schema.
	if sub, ok := s["not"]; ok {
		if res, l := bd.node(ptr+"/not", sub, false); l {
			delete(s, "not")
			loosened = true
		} else {
			s["not"] = res
		}
	}
	if sub, ok := s["if"]; ok {
		if res, l := bd.node(ptr+"/if", sub, false); l {
			delete(s, "if")
			delete(s, "then")
			delete(s, "else")
			loosened = true
		} else {
			s["if"] = res
		}
	}
	if _, ok := s["patternProperties"]; ok {
		bd.clamp(s, "maxProperties", bd.lim.MaxProperties)
	}
	if needBound && !hasEnum && !hasConst && !hasRef {
		switch {
		case hasType:
			bd.types(s)
		case !combinators:
			// Unconstrained: any bounded value, narrowed by whatever
			// else the schema says (properties, minLength, not, ...).
			s["$ref"] = bd.anyRef
			bd.usedAny = true
		}
	}
	return s, loosened
}

// upgrade rewrites the keywords of older drafts into their 2020-12 form,
// in place.
func (bd *bounder) upgrade(ptr string, s map[string]any) {
	if bd.oldRefs {
		if _, ok := s["$ref"]; ok {
			for k := range s {
				if !keptBesideRef[k] {
					delete(s, k)
				}
			}
		}
	}
	if d, ok := s["definitions"]; ok {
		bd.merge(ptr, s, "definitions", "$defs", d)
		delete(s, "definitions")
	}
	if items, ok := s["items"].([]any); ok {
		if _, dup := s["prefixItems"]; dup {
			bd.fail(ptr+"/items", "both items as a list and prefixItems: say the tuple once")
			return
		}
		s["prefixItems"] = items
		delete(s, "items")
		if add, ok := s["additionalItems"]; ok {
			s["items"] = add
		}
	}
	// Without items as a list, additionalItems never applied.
	delete(s, "additionalItems")
	for _, side := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		excl, bound := side[0], side[1]
		if flag, ok := s[excl].(bool); ok {
			// Draft-04: a flag on minimum or maximum.
			delete(s, excl)
			if n, ok := s[bound]; ok && flag {
				s[excl] = n
				delete(s, bound)
			}
		}
	}
	if deps, ok := s["dependencies"]; ok {
		m, ok := deps.(map[string]any)
		if !ok {
			bd.fail(ptr+"/dependencies", "dependencies must be an object")
			return
		}
		req, sch := map[string]any{}, map[string]any{}
		for k, d := range m {
			if list, ok := d.([]any); ok {
				req[k] = list
			} else {
				sch[k] = d
			}
		}
		delete(s, "dependencies")
		if len(req) > 0 {
			bd.merge(ptr, s, "dependencies", "dependentRequired", req)
		}
		if len(sch) > 0 {
			bd.merge(ptr, s, "dependencies", "dependentSchemas", sch)
		}
	}
}

// merge puts the entries of from (found under the keyword old) into the
// object keyword kw of s, refusing a name given under both.
func (bd *bounder) merge(ptr string, s map[string]any, old, kw string, from any) {
	src, ok := from.(map[string]any)
	if !ok {
		bd.fail(ptr+"/"+old, "%s must be an object", old)
		return
	}
	dst := map[string]any{}
	if cur, ok := s[kw]; ok {
		m, ok := cur.(map[string]any)
		if !ok {
			bd.fail(ptr+"/"+kw, "%s must be an object", kw)
			return
		}
		dst = cloneMap(m)
	}
	for _, k := range sortedKeys(src) {
		if _, dup := dst[k]; dup {
			bd.fail(ptr+"/"+old+"/"+escape(k), "%q is named in both %s and %s", k, old, kw)
			return
		}
		dst[k] = src[k]
	}
	s[kw] = dst
}

// extraKeys rewrites additionalProperties, the one schema of unlisted
// keys, into patternProperties, which the validator bounds. It reports
// whether the object now accepts keys the upstream refused.
func (bd *bounder) extraKeys(ptr string, s map[string]any) bool {
	ap, ok := s["additionalProperties"]
	if !ok || ap == false {
		return false
	}
	delete(s, "additionalProperties")
	if ap == true {
		return false
	}
	pp, isMap := s["patternProperties"].(map[string]any)
	if _, ok := s["patternProperties"]; ok && !isMap {
		bd.fail(ptr+"/patternProperties", "patternProperties must be an object")
		return false
	}
	pp = cloneMap(pp)
	if _, ok := pp[""]; ok {
		// "" matches every key already: additionalProperties never
		// applied.
		return false
	}
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 && len(pp) == 0 {
		// Every key is unlisted, so the schema of unlisted keys is the
		// schema of every key: a map such as Record<string, T>. It is
		// walked with the rest of patternProperties.
		pp[""] = ap
		s["patternProperties"] = pp
		s["additionalProperties"] = false
		return false
	}
	// The validator cannot say "every key not listed"; any bounded value
	// stands in, and the upstream validates its own arguments.
	pp[""] = bd.any()
	s["patternProperties"] = pp
	s["additionalProperties"] = false
	return true
}

// types adds the bounds each of the schema's types calls for. A type that
// is not a string or list of strings is left for CheckBounded to name.
func (bd *bounder) types(s map[string]any) {
	names, _ := typeNames(s["type"])
	for _, name := range names {
		switch name {
		case "object":
			if s["additionalProperties"] == false || s["unevaluatedProperties"] == false {
				break
			}
			// Open to unlisted keys: they stay open, each any bounded
			// value, and few enough.
			pp, _ := s["patternProperties"].(map[string]any)
			pp = cloneMap(pp)
			if _, ok := pp[""]; !ok {
				pp[""] = bd.any()
			}
			s["patternProperties"] = pp
			s["additionalProperties"] = false
			bd.clamp(s, "maxProperties", bd.lim.MaxProperties)
		case "array":
			bd.clamp(s, "maxItems", bd.lim.MaxItems)
			if _, ok := s["items"]; !ok {
				s["items"] = bd.any()
			}
		case "string":
			bd.clamp(s, "maxLength", bd.lim.MaxString)
		case "number", "integer":
			if !isNumber(s["minimum"]) && !isNumber(s["exclusiveMinimum"]) {
				s["minimum"] = json.Number("-" + UpstreamMaxNumber)
			}
			if !isNumber(s["maximum"]) && !isNumber(s["exclusiveMaximum"]) {
				s["maximum"] = json.Number(UpstreamMaxNumber)
			}
		}
	}
}

// clamp sets s[kw] to limit unless it holds a number no larger.
func (bd *bounder) clamp(s map[string]any, kw string, limit int) {
	if n, ok := s[kw].(json.Number); ok {
		if r, ok := new(big.Rat).SetString(string(n)); ok && r.Cmp(big.NewRat(int64(limit), 1)) <= 0 {
			return
		}
	}
	s[kw] = json.Number(strconv.Itoa(limit))
}

// each bounds the schemas of an object-valued keyword; a value of another
// kind is left for CheckBounded to name.
func (bd *bounder) each(ptr string, s map[string]any, kw string, needBound bool) bool {
	m, ok := s[kw].(map[string]any)
	if !ok {
		return false
	}
	out := make(map[string]any, len(m))
	loosened := false
	for _, k := range sortedKeys(m) {
		var l bool
		out[k], l = bd.node(ptr+"/"+kw+"/"+escape(k), m[k], needBound)
		loosened = loosened || l
	}
	s[kw] = out
	return loosened
}

// list bounds the schemas of an array-valued keyword.
func (bd *bounder) list(ptr string, s map[string]any, kw string, needBound bool) bool {
	a, ok := s[kw].([]any)
	if !ok {
		return false
	}
	out := make([]any, len(a))
	loosened := false
	for i, sub := range a {
		var l bool
		out[i], l = bd.node(ptr+"/"+kw+"/"+strconv.Itoa(i), sub, needBound)
		loosened = loosened || l
	}
	s[kw] = out
	return loosened
}

// upstreamFormat reports whether the validator asserts format name as
// the drafts define it. airlock's own formats are left out: an upstream
// that used the name would not mean airlock's rule.
func upstreamFormat(name string) bool {
	return knownFormats[name] && name != FormatRelativePath && name != FormatHTTPURL
}

// translatePointer maps a JSON pointer into the upstream document to the
// same place in the rewritten one: definitions become $defs, items as a
// list prefixItems, additionalItems items, dependencies
// dependentRequired or dependentSchemas, and an additionalProperties
// that became the schema of every key patternProperties/"". A place
// Bound removed keeps its path, and CheckBounded refuses the $ref.
func translatePointer(root any, ptr string) []string {
	tokens := splitPointer(ptr)
	out := make([]string, 0, len(tokens))
	cur := root
	for i := 0; i < len(tokens); {
		s, ok := cur.(map[string]any)
		if !ok {
			return append(out, tokens[i:]...)
		}
		t := tokens[i]
		switch t {
		case "definitions", "$defs", "properties", "patternProperties", "dependentSchemas", "dependencies":
			if i+1 == len(tokens) {
				return append(out, tokens[i:]...)
			}
			m, _ := s[t].(map[string]any)
			key := tokens[i+1]
			name := t
			switch t {
			case "definitions":
				name = "$defs"
			case "dependencies":
				name = "dependentSchemas"
				if _, isList := m[key].([]any); isList {
					name = "dependentRequired"
				}
			}
			out = append(out, name, key)
			cur = m[key]
			i += 2
		case "items", "prefixItems", "allOf", "anyOf", "oneOf":
			list, isList := s[t].([]any)
			if !isList {
				out = append(out, t)
				cur = s[t]
				i++
				continue
			}
			if i+1 == len(tokens) {
				return append(out, tokens[i:]...)
			}
			name := t
			if t == "items" {
				name = "prefixItems"
			}
			out = append(out, name, tokens[i+1])
			cur = nil
			if n, err := strconv.Atoi(tokens[i+1]); err == nil && n >= 0 && n < len(list) {
				cur = list[n]
			}
			i += 2
		case "additionalItems":
			if _, isList := s["items"].([]any); isList {
				t = "items"
			}
			out = append(out, t)
			cur = s["additionalItems"]
			i++
		case "additionalProperties":
			props, _ := s["properties"].(map[string]any)
			pp, _ := s["patternProperties"].(map[string]any)
			_, isSchema := s[t].(map[string]any)
			if isSchema && len(props) == 0 && len(pp) == 0 {
				out = append(out, "patternProperties", "")
			} else {
				out = append(out, t)
			}
			cur = s[t]
			i++
		case "not", "if", "then", "else", "contains", "propertyNames", "contentSchema":
			out = append(out, t)
			cur = s[t]
			i++
		default:
			// Not a schema keyword: the rest is data, kept as it is.
			return append(out, tokens[i:]...)
		}
	}
	return out
}

// splitPointer splits an RFC 6901 pointer into its unescaped tokens.
func splitPointer(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(ptr[1:], "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts
}

// refFragment writes tokens as the fragment of a $ref: a JSON pointer,
// percent-encoded where a URI fragment needs it.
func refFragment(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		var tok strings.Builder
		escapeToken(&tok, t)
		for _, c := range []byte(tok.String()) {
			if fragmentSafe(c) {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
	}
	return b.String()
}

// fragmentSafe reports whether c may stand unescaped in a URI fragment
// (RFC 3986: unreserved, sub-delims, ":" and "@"), "+" aside, which some
// readers take for a space.
func fragmentSafe(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*,;=:@", c) >= 0
}

// encode writes a decoded schema as compact JSON, object keys sorted (so
// the same schema gives the same bytes) and <, > and & as they are.
func encode(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("writing the bounded schema: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// cloneMap copies the top level of m (nil gives an empty map).
func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}
