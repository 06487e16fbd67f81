package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Code is a stable snake_case error code.
type Code string

const (
	// Faults worth retrying on the same model.
	CodeRateLimited     Code = "rate_limited"     // 429: the provider asks us to slow down
	CodeOverloaded      Code = "overloaded"       // 529 (Anthropic): the provider is overloaded
	CodeServerError     Code = "server_error"     // a 5xx status
	CodeRequestTimeout  Code = "request_timeout"  // 408 from the server
	CodeConflict        Code = "conflict"         // 409: a transient conflict on the provider's side
	CodeAttemptTimeout  Code = "attempt_timeout"  // one attempt ran past Policy.AttemptTimeout
	CodeConnectionError Code = "connection_error" // refused, reset, or cut short before a whole answer

	// Faults not worth retrying on the same model.
	CodeBadRequest        Code = "bad_request"        // another 4xx: the request itself is wrong for this model
	CodeAuthFailed        Code = "auth_failed"        // 401 or 403: the key is missing, wrong or not allowed
	CodeModelNotFound     Code = "model_not_found"    // 404: no such model or endpoint at this base URL
	CodeMalformedResponse Code = "malformed_response" // a 2xx whose body is not the API's answer
	CodeCircuitOpen       Code = "circuit_open"       // the model's breaker is open; nothing was sent
	CodeRetryAfterTooLong Code = "retry_after_too_long"

	// Outcomes of a whole call.
	CodeInvalidRequest   Code = "invalid_request"   // the Request broke a limit; nothing was sent
	CodeDeadlineExceeded Code = "deadline_exceeded" // Policy.Deadline passed
	CodeCanceled         Code = "canceled"          // the caller's context is done
	CodeAllModelsFailed  Code = "all_models_failed" // every model of the chain failed
	CodeInvalidOutput    Code = "invalid_output"    // structured output still invalid after the repair rounds
	CodeInternal         Code = "internal_error"    // a bug in this package, recovered
)

// Error is a model call's failure. Message and Hint are safe to show: they
// never hold a key or the provider's raw body; the underlying cause, which
// might, is kept apart (Unwrap).
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
	// Model is the Entry name the failure belongs to, when one does.
	Model string `json:"model,omitempty"`
	// Status is the HTTP status, when there was one.
	Status int `json:"status,omitempty"`
	// RetryAfter is the wait the server asked for, when it asked.
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// Attempts lists the failures that led to a chain-level Error.
	Attempts []*Error `json:"attempts,omitempty"`

	cause         error
	hasRetryAfter bool // RetryAfter was sent, even if zero ("now")
}

func (e *Error) Error() string {
	s := string(e.Code) + ": " + e.Message
	if e.Model != "" {
		s = e.Model + ": " + s
	}
	return s
}

// Unwrap returns the internal cause, which may hold provider detail that
// is not safe to show a model.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// MarshalJSON writes the safe fields only; it exists so that RetryAfter
// is written in milliseconds rather than nanoseconds.
func (e *Error) MarshalJSON() ([]byte, error) {
	type safe struct {
		Code         Code     `json:"code"`
		Message      string   `json:"message"`
		Hint         string   `json:"hint"`
		Model        string   `json:"model,omitempty"`
		Status       int      `json:"status,omitempty"`
		RetryAfterMS int64    `json:"retry_after_ms,omitempty"`
		Attempts     []*Error `json:"attempts,omitempty"`
	}
	return json.Marshal(safe{e.Code, e.Message, e.Hint, e.Model, e.Status, e.RetryAfter.Milliseconds(), e.Attempts})
}

// Retryable reports whether the same model may be asked again.
func (e *Error) Retryable() bool {
	switch e.Code {
	case CodeRateLimited, CodeOverloaded, CodeServerError, CodeRequestTimeout,
		CodeConflict, CodeAttemptTimeout, CodeConnectionError:
		return true
	}
	return false
}

// health reports whether the failure says something about the model's
// health, and so counts against its circuit breaker: a malformed request
// or a wrong key does not make the model unhealthy.
func (e *Error) health() bool {
	return e.Retryable() || e.Code == CodeMalformedResponse
}

// hints for each code: one concrete next step.
var hints = map[Code]string{
	CodeRateLimited:       "Wait and try again, lower the request rate (Limits.RatePerSecond), or add a fallback model",
	CodeOverloaded:        "Try again later or add a fallback model from another provider",
	CodeServerError:       "Try again later or add a fallback model; the provider failed, not the request",
	CodeRequestTimeout:    "Try again; if it keeps happening, send a shorter request",
	CodeConflict:          "Try again; the provider reported a transient conflict",
	CodeAttemptTimeout:    "Raise Policy.AttemptTimeout, lower Request.MaxTokens, or add a faster fallback model",
	CodeConnectionError:   "Check that the base URL is right and the server is up and reachable",
	CodeBadRequest:        "Fix the request for this model: check the model name, the messages and the tool schemas",
	CodeAuthFailed:        "Set a valid API key (OPENAI_API_KEY or ANTHROPIC_API_KEY) with access to this model",
	CodeModelNotFound:     "Check the model name and the base URL (OpenAI-compatible: http://host:port/v1; Anthropic: http://host:port)",
	CodeMalformedResponse: "Check that the base URL points at the provider's API and not at another service",
	CodeCircuitOpen:       "Wait for the breaker's cool-down (Breaker.Cooldown) or add a fallback model",
	CodeRetryAfterTooLong: "Try again after the time the provider named, or raise Policy.MaxRetryAfter",
	CodeInvalidRequest:    "Fix the request as the message says and send it again",
	CodeDeadlineExceeded:  "Raise Policy.Deadline or ask for less work in one call",
	CodeCanceled:          "Nothing to repair: the caller stopped the call",
	CodeAllModelsFailed:   "See the attempts listed; fix the first cause or add a working fallback model",
	CodeInvalidOutput:     "Simplify the output schema or give the model an example of a valid answer",
	CodeInternal:          "Report this as a bug in airlock's model package",
}

// newError builds an *Error with the code's hint.
func newError(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Hint: hints[code], cause: cause}
}

// asError returns err as an *Error, wrapping anything else as internal.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return newError(CodeInternal, err, "unexpected failure: %T", err)
}
