package model

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ClientOptions configures a provider client. A nil *ClientOptions, or a
// zero field, means the default.
type ClientOptions struct {
	// APIKey is the key to send; when unset it is read from
	// OPENAI_API_KEY or ANTHROPIC_API_KEY. A provider's own default base
	// URL needs one; a custom base URL (Ollama, vLLM, a test server) may
	// do without. Whichever key it is, it goes to the spec's base URL, as
	// the SDKs do with their own base-URL variables: point a spec at a
	// server you trust with the key, or unset the variable.
	APIKey APIKey
	// HTTPClient sends the requests (a client with no timeout of its own
	// when nil: the attempt's context is the timeout).
	HTTPClient *http.Client
	// Now is the clock Retry-After dates are read against.
	Now func() time.Time
}

func (o *ClientOptions) resolve(spec Spec, env string) (ClientOptions, error) {
	var q ClientOptions
	if o != nil {
		q = *o
	}
	if !q.APIKey.IsSet() {
		q.APIKey = KeyFromEnv(env)
	}
	if !q.APIKey.IsSet() && spec.BaseURL == "" {
		e := newError(CodeAuthFailed, nil, "%s needs an API key and none was given: set %s", spec, env)
		e.Hint = "Set " + env + ", or pass ClientOptions.APIKey"
		return q, e
	}
	if q.HTTPClient == nil {
		q.HTTPClient = &http.Client{}
	}
	if q.Now == nil {
		q.Now = time.Now
	}
	return q, nil
}

// New builds the provider client a spec names, as a chain Entry named
// after the spec, whose limits are shared with every entry of the same
// provider and base URL.
func New(spec Spec, opts *ClientOptions) (Entry, error) {
	var cl Client
	var err error
	switch spec.Provider {
	case ProviderOpenAI:
		cl, err = NewOpenAI(spec, opts)
	case ProviderAnthropic:
		cl, err = NewAnthropic(spec, opts)
	default:
		err = specError("unknown provider %q", spec.Provider)
	}
	if err != nil {
		return Entry{}, err
	}
	return Entry{Name: spec.String(), Provider: string(spec.Provider) + "@" + spec.BaseURLOrDefault(), Client: cl}, nil
}

// statusError maps an HTTP error status to an *Error. kind is the
// provider's own error type from the body ("overloaded_error"), kept only
// when it is a plain word, since the body's message may echo the request.
func statusError(status int, resp *http.Response, kind string, now time.Time, cause error) *Error {
	var code Code
	switch {
	case status == http.StatusRequestTimeout:
		code = CodeRequestTimeout
	case status == http.StatusConflict:
		code = CodeConflict
	case status == http.StatusTooManyRequests:
		code = CodeRateLimited
	case status == 529:
		code = CodeOverloaded
	case status >= 500:
		code = CodeServerError
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		code = CodeAuthFailed
	case status == http.StatusNotFound:
		code = CodeModelNotFound
	case status >= 400:
		code = CodeBadRequest
	default:
		code = CodeMalformedResponse
	}
	msg := "the provider answered HTTP " + strconv.Itoa(status)
	if k := plainWord(kind); k != "" {
		msg += " (" + k + ")"
	}
	e := newError(code, cause, "%s", msg)
	e.Status = status
	var h http.Header
	if resp != nil {
		h = resp.Header
	}
	if d, ok := ParseRetryAfter(h, now); ok {
		e.RetryAfter, e.hasRetryAfter = d, true
	}
	return e
}

// maxKindLen bounds the provider error type quoted in a message.
const maxKindLen = 64

func plainWord(s string) string {
	if len(s) > maxKindLen {
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return ""
		}
	}
	return s
}

// transportError maps an error that carries no HTTP status: the context,
// the connection, or a body that is not the API's answer.
func transportError(ctx context.Context, err error) *Error {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return newError(CodeAttemptTimeout, err, "the attempt timed out before a whole answer came")
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return canceled(err)
	case isConnError(err):
		return newError(CodeConnectionError, err, "the connection failed before a whole answer came")
	}
	return newError(CodeMalformedResponse, err, "the answer is not the API's JSON")
}

func isConnError(err error) bool {
	var ue *url.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &ue), errors.As(err, &oe),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed):
		return true
	}
	// A body cut short reads as an unexpected EOF; but so does JSON cut
	// short inside a whole body, which the SDKs report as a parse error.
	// Only the first is the connection's fault.
	return (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)) &&
		!strings.Contains(err.Error(), "parsing response")
}

// validArgs keeps a tool call's arguments as the model wrote them when
// they are JSON, and as a JSON string otherwise, so that the gate refuses
// them with invalid_arguments instead of this package failing the call.
func validArgs(s string) []byte {
	if s == "" {
		return []byte("{}")
	}
	if json.Valid([]byte(s)) {
		return []byte(s)
	}
	q, _ := json.Marshal(s) // a string always marshals
	return q
}

// FromSpecs parses each spec (PROVIDER:MODEL[@BASE_URL]) and builds a
// chain of them, the first the primary: what a CLI's --model and
// --fallback flags need. copts applies to every client, so leave its
// APIKey unset when the chain mixes providers: each then reads its own
// environment variable.
func FromSpecs(specs []string, copts *ClientOptions, opts *Options) (*Chain, error) {
	if len(specs) > MaxChainModels {
		return nil, newError(CodeInvalidRequest, nil, "a chain holds at most %d models (MaxChainModels); %d were given", MaxChainModels, len(specs))
	}
	entries := make([]Entry, 0, len(specs))
	for _, s := range specs {
		sp, err := ParseSpec(s)
		if err != nil {
			return nil, err
		}
		e, err := New(sp, copts)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return NewChain(entries, opts)
}
