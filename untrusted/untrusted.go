// Package untrusted keeps text that did not come from the user or the
// operator in its place: it wraps such text in envelopes that name its
// source and cannot be closed or forged from inside, scans it for prompt
// injection, and tracks which values (URLs, hosts, addresses, paths,
// tokens) reached a session only through it, so that a risky call built
// from them can be turned into a question for a person.
//
// Three parts, usable apart:
//
//   - Wrap and Deliver put content in an envelope with a fresh random
//     boundary (crypto/rand) per call; Instructions is the text for the
//     system prompt that tells the model what an envelope means.
//     Datamarking (spotlighting) is an option.
//
//   - Scan scores text for injection signals with stable names
//     (instruction_override, chat_template, hidden_text, ...) and flags it
//     at DefaultThreshold or above. Beside the hand-written rules, a small
//     model of our own (a logistic regression over character n-grams,
//     untrusted/internal/ngram, weights embedded) scores the text's
//     windows and adds the signal model when it alone reaches the
//     threshold. Its work is bounded by named limits.
//
//   - Provenance remembers, per session, values seen only in untrusted
//     content, and Check says when a call's destination arguments carry
//     one, or a sensitive token (sudo, id_rsa, 169.254.169.254) that the
//     user's goal never mentioned.
//
//     env, rep, err := untrusted.Deliver("tool:web_fetch", page, nil)
//     if rep.Flagged { /* still delivered, marked flagged="true" */ }
package untrusted

import "fmt"

// Code is a stable snake_case error code.
type Code string

const (
	CodeInvalidSource   Code = "invalid_source"    // a source name with characters an envelope attribute cannot hold
	CodeContentTooLarge Code = "content_too_large" // content over MaxWrapBytes
	CodeInvalidOption   Code = "invalid_option"    // an Options field out of range
	CodeInvalidArgs     Code = "invalid_arguments" // call arguments that are not JSON within the limits
	CodeInvalidInput    Code = "invalid_input"     // a scan input line that is not {"text": "..."} (airlock scan)
	CodeInputTooLarge   Code = "input_too_large"   // a scan input line over the line limit (airlock scan)
)

// Error is a refusal: a stable code, a message, and a hint that says what
// to do next.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

func errorf(code Code, hint, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Hint: hint}
}
