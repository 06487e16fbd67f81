// Package schema validates a tool call's raw JSON arguments against the
// tool's bounded JSON Schema (draft 2020-12): the gate's decode and
// validate stages.
//
// A schema is compiled once, at start-up, and is then safe for concurrent
// use. Compile accepts only bounded schemas (see CheckBounded): every
// object closed to unknown properties, every string, array and number
// bounded. The schema given is also what the model is shown (Doc).
//
// Validate refuses, in this order and each as a *tool.Error: arguments over
// Options.MaxArgBytes or holding more than MaxValues values
// (arguments_too_large); input that is not one JSON object in valid UTF-8,
// repeats a key or trips another decoder limit (invalid_arguments); and
// every schema violation at once (invalid_arguments, with Violations each
// naming its JSON pointer), so a model can repair them all in one call.
//
//	s, err := schema.Compile("read_file", doc, nil)
//	...
//	if terr := s.Validate(call.Args); terr != nil {
//		return tool.Result{Error: terr}
//	}
//
// Bound turns the input schema of an upstream MCP server's tool, which is
// seldom bounded, into a bounded schema that accepts the same arguments
// within airlock's bounds (Bounds); a schema it cannot turn so is refused,
// and the tool is not offered.
//
// Two formats are asserted beyond the standard ones: FormatRelativePath
// and FormatHTTPURL.
package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"airlock.dev/airlock/tool"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// DefaultMaxArgBytes bounds the raw arguments of one call before decoding.
const DefaultMaxArgBytes = 4 << 20

// Limits of what a refusal reports.
const (
	// MaxViolations is how many violations one error lists; the message
	// says how many more there were.
	MaxViolations = 100

	// MaxSummaryViolations is how many violations the error's Message
	// repeats; the Violations list has them all (up to MaxViolations).
	MaxSummaryViolations = 10

	// MaxViolationMessage is the longest message of one violation, in
	// bytes; a longer one is cut at a character boundary and ends in "…".
	MaxViolationMessage = 256
)

// Hints of the errors Validate returns.
const (
	hintTooLarge  = "Send less: shorten the longest values or split the work into several calls"
	hintMalformed = "Send the arguments as one valid JSON object, each key once, and call again"
	hintViolation = "Fix every listed argument and call again; the tool's schema lists what each accepts"
)

// Options configures Compile. A nil *Options, or a zero field, means the
// default.
type Options struct {
	// MaxArgBytes bounds the raw arguments of one call, before decoding
	// (DefaultMaxArgBytes when zero). Arguments over it are refused with
	// arguments_too_large.
	MaxArgBytes int
}

// Schema is a compiled bounded schema. It is immutable and safe for
// concurrent use. The zero Schema refuses every call.
type Schema struct {
	name        string
	doc         json.RawMessage
	compiled    *jsonschema.Schema
	maxArgBytes int
}

// Compile checks that doc is a bounded schema (CheckBounded) and compiles
// it for validation. name is the tool's name; errors start with it. Remote
// $ref is off: only the document itself and its internal references are
// available to the compiler.
func Compile(name string, doc json.RawMessage, opts *Options) (*Schema, error) {
	s := &Schema{name: name, doc: slices.Clone(doc), maxArgBytes: DefaultMaxArgBytes}
	if opts != nil {
		switch {
		case opts.MaxArgBytes < 0:
			return nil, fmt.Errorf("schema %q: Options.MaxArgBytes is negative (%d)", name, opts.MaxArgBytes)
		case opts.MaxArgBytes > 0:
			s.maxArgBytes = opts.MaxArgBytes
		}
	}
	v, err := decodeSchema(doc)
	if err != nil {
		return nil, fmt.Errorf("schema %q: %w", name, err)
	}
	if err := checkBounded(v); err != nil {
		return nil, fmt.Errorf("schema %q: %w", name, err)
	}
	s.compiled, err = compile(name, v)
	if err != nil {
		return nil, fmt.Errorf("schema %q does not compile: %w", name, err)
	}
	return s, nil
}

// compile compiles a decoded schema document with draft 2020-12 as the
// default, every format asserted, ours registered, and a loader that
// refuses every URL.
func compile(name string, v any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	c.RegisterFormat(&jsonschema.Format{Name: FormatRelativePath, Validate: validateRelativePath})
	c.RegisterFormat(&jsonschema.Format{Name: FormatHTTPURL, Validate: validateHTTPURL})
	loc := "airlock:///schemas/" + url.PathEscape(name) + ".json"
	if err := c.AddResource(loc, v); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

// errRemoteRef is what the compiler's loader answers for every URL: a
// schema may refer only to itself. CheckBounded refuses such a $ref
// first; the loader is the second wall.
var errRemoteRef = errors.New("remote $ref is off: a schema may refer only inside itself (#/$defs/name)")

type refuseLoader struct{}

func (refuseLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%q: %w", u, errRemoteRef)
}

// Doc returns the schema as given to Compile: what models are shown.
func (s *Schema) Doc() json.RawMessage {
	if s == nil {
		return nil
	}
	return slices.Clone(s.doc)
}

// Name returns the name given to Compile.
func (s *Schema) Name() string {
	if s == nil {
		return ""
	}
	return s.name
}

// Validate checks raw arguments against the schema. It returns nil when
// they are valid, and otherwise an *tool.Error: arguments_too_large over
// the size cap, invalid_arguments for malformed JSON, a repeated key, a
// tripped decoder limit or schema violations (all listed, by pointer).
func (s *Schema) Validate(raw json.RawMessage) *tool.Error {
	_, err := s.Decode(raw)
	return err
}

// Decode validates raw like Validate and returns the arguments it
// validated, numbers as json.Number, so that a caller needs no second
// decoding.
func (s *Schema) Decode(raw json.RawMessage) (args map[string]any, terr *tool.Error) {
	defer func() {
		// The validator is a library; a fault in it or here must not take
		// the gate down. Nothing ran, so this is airlock's own failure.
		if r := recover(); r != nil {
			args, terr = nil, &tool.Error{Code: tool.CodeInternal, Message: "schema validation failed internally",
				Hint: "Report this to the operator; the call was not run"}
		}
	}()
	if s == nil || s.compiled == nil {
		return nil, &tool.Error{Code: tool.CodeInternal, Message: "the tool's schema was not compiled",
			Hint: "Report this to the operator; the call cannot be validated"}
	}
	if len(raw) > s.maxArgBytes {
		return nil, &tool.Error{Code: tool.CodeArgumentsTooLarge,
			Message: fmt.Sprintf("arguments are %d bytes, over the limit of %d bytes (MaxArgBytes)", len(raw), s.maxArgBytes),
			Hint:    hintTooLarge}
	}
	v, derr := decodeJSON(raw, argLimits)
	if derr != nil && derr.TooLarge {
		return nil, &tool.Error{Code: tool.CodeArgumentsTooLarge, Message: "arguments: " + derr.Error(), Hint: hintTooLarge}
	}
	if derr != nil {
		return nil, &tool.Error{Code: tool.CodeInvalidArguments, Message: "arguments: " + derr.Error(), Hint: hintMalformed,
			Violations: []tool.Violation{{Pointer: derr.Pointer, Message: derr.Msg}}}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		msg := "arguments must be a JSON object, got " + jsonType(v)
		return nil, &tool.Error{Code: tool.CodeInvalidArguments, Message: msg, Hint: hintMalformed,
			Violations: []tool.Violation{{Pointer: "", Message: msg}}}
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return obj, nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return nil, &tool.Error{Code: tool.CodeInternal, Message: "schema validation failed internally",
			Hint: "Report this to the operator; the call was not run"}
	}
	return nil, violationError(collect(verr, nil))
}

// collect appends the leaf violations under e: the causes that explain
// the failure, not the groups that gather them.
func collect(e *jsonschema.ValidationError, out []tool.Violation) []tool.Violation {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			out = collect(c, out)
		}
		return out
	}
	at := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			out = append(out, tool.Violation{Pointer: pointer(append(slices.Clip(at), p)),
				Message: "unknown property: the schema does not list it"})
		}
		return out
	case *kind.Required:
		for _, p := range k.Missing {
			out = append(out, tool.Violation{Pointer: pointer(append(slices.Clip(at), p)),
				Message: "required property is missing"})
		}
		return out
	case *kind.FalseSchema:
		return append(out, tool.Violation{Pointer: pointer(at), Message: "not allowed: the schema accepts no value here"})
	case *kind.Format:
		return append(out, tool.Violation{Pointer: pointer(at),
			Message: clip(fmt.Sprintf("not a valid %s: %v", k.Want, k.Err))})
	case *kind.Pattern:
		return append(out, tool.Violation{Pointer: pointer(at),
			Message: clip(fmt.Sprintf("does not match the pattern %s", k.Want))})
	}
	return append(out, tool.Violation{Pointer: pointer(at), Message: clip(kindMessage(e.ErrorKind))})
}

// kindMessage says what is wrong for one error kind. The bounds are
// written here, exactly and without digit grouping (the validator's
// English messages print 5000 as "5,000" and compare as float64); the
// rest are the validator's own messages, without the location it would
// prefix.
func kindMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.MinLength:
		return fmt.Sprintf("too short: %d characters, want at least %d (minLength)", k.Got, k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("too long: %d characters, want at most %d (maxLength)", k.Got, k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("too few items: %d, want at least %d (minItems)", k.Got, k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("too many items: %d, want at most %d (maxItems)", k.Got, k.Want)
	case *kind.MinProperties:
		return fmt.Sprintf("too few properties: %d, want at least %d (minProperties)", k.Got, k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("too many properties: %d, want at most %d (maxProperties)", k.Got, k.Want)
	case *kind.UniqueItems:
		return fmt.Sprintf("items %d and %d are equal, want every item unique (uniqueItems)", k.Duplicates[0], k.Duplicates[1])
	case *kind.Minimum:
		return fmt.Sprintf("%s is less than the minimum %s", decimal(k.Got), decimal(k.Want))
	case *kind.Maximum:
		return fmt.Sprintf("%s is greater than the maximum %s", decimal(k.Got), decimal(k.Want))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("%s is not greater than %s (exclusiveMinimum)", decimal(k.Got), decimal(k.Want))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("%s is not less than %s (exclusiveMaximum)", decimal(k.Got), decimal(k.Want))
	case *kind.MultipleOf:
		return fmt.Sprintf("%s is not a multiple of %s", decimal(k.Got), decimal(k.Want))
	}
	out := (&jsonschema.ValidationError{ErrorKind: k}).BasicOutput()
	if out.Error == nil {
		return "invalid value"
	}
	return out.Error.String()
}

// decimal writes an exact number as a plain decimal when it has one (every
// JSON number does), and as a fraction otherwise.
func decimal(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	if n, exact := r.FloatPrec(); exact {
		return r.FloatString(n)
	}
	return r.RatString()
}

// violationError sorts and deduplicates violations and summarizes them.
func violationError(vs []tool.Violation) *tool.Error {
	slices.SortFunc(vs, func(a, b tool.Violation) int {
		if c := comparePointers(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	vs = slices.Compact(vs)
	if len(vs) == 0 { // a failure with no leaf: say so rather than nothing
		vs = []tool.Violation{{Pointer: "", Message: "the arguments do not match the schema"}}
	}
	total := len(vs)
	if total > MaxViolations {
		vs = vs[:MaxViolations:MaxViolations]
	}
	var b strings.Builder
	if total == 1 {
		b.WriteString("1 argument is invalid: ")
	} else {
		fmt.Fprintf(&b, "%d arguments are invalid: ", total)
	}
	for i, v := range vs[:min(len(vs), MaxSummaryViolations)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(displayPointer(v.Pointer))
		b.WriteString(": ")
		b.WriteString(v.Message)
	}
	if total > MaxSummaryViolations {
		fmt.Fprintf(&b, ", and %d more", total-MaxSummaryViolations)
		if total > MaxViolations {
			fmt.Fprintf(&b, " (the first %d are listed; MaxViolations)", MaxViolations)
		}
	}
	return &tool.Error{Code: tool.CodeInvalidArguments, Message: b.String(), Hint: hintViolation, Violations: vs}
}

// displayPointer shows the root pointer "" as "(root)" in messages.
func displayPointer(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

// comparePointers orders JSON pointers token by token, array indexes by
// number, so "/items/2" comes before "/items/10".
func comparePointers(a, b string) int {
	for a != "" && b != "" {
		var ta, tb string
		ta, a = nextToken(a)
		tb, b = nextToken(b)
		if ta == tb {
			continue
		}
		na, errA := strconv.ParseUint(ta, 10, 64)
		nb, errB := strconv.ParseUint(tb, 10, 64)
		if errA == nil && errB == nil && na != nb {
			if na < nb {
				return -1
			}
			return 1
		}
		return strings.Compare(ta, tb)
	}
	return strings.Compare(a, b)
}

// nextToken splits "/tok/rest" into "tok" and "/rest".
func nextToken(p string) (string, string) {
	p = p[1:]
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i:]
	}
	return p, ""
}

// clip cuts a message to MaxViolationMessage bytes at a character boundary.
func clip(s string) string {
	if len(s) <= MaxViolationMessage {
		return s
	}
	cut := MaxViolationMessage - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}
