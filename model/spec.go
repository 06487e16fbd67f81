package model

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Provider names a wire protocol.
type Provider string

const (
	ProviderOpenAI    Provider = "openai"    // chat completions; OpenAI, Ollama, vLLM, LM Studio, ...
	ProviderAnthropic Provider = "anthropic" // messages
)

// Default base URLs, written as each SDK expects them: the OpenAI one
// ends in /v1, the Anthropic one does not.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
)

// Limits of a model spec.
const (
	// MaxSpecLen is the longest spec accepted, in bytes.
	MaxSpecLen = 2048
	// MaxModelNameLen is the longest model name accepted, in bytes.
	MaxModelNameLen = 256
)

// Spec names a model: PROVIDER:MODEL[@BASE_URL]. PROVIDER is the text
// before the first ':'; BASE_URL, when present, the text after the last
// '@', so a model name may hold ':' (ollama's "llama3.2:3b") and '@'
// alike, while a base URL may hold neither userinfo nor '@' (a key in a
// URL would be printed wherever the spec is).
type Spec struct {
	Provider Provider
	Model    string
	BaseURL  string // "" means the provider's default
}

// ParseSpec parses PROVIDER:MODEL[@BASE_URL], as in "openai:gpt-4o-mini",
// "openai:llama3.2:3b@http://127.0.0.1:11434/v1" or
// "anthropic:claude-sonnet-4-5@http://127.0.0.1:8080". Errors are
// *Error with code invalid_request.
func ParseSpec(s string) (Spec, error) {
	if len(s) > MaxSpecLen {
		return Spec{}, specError("the model spec is %d bytes, over the limit of %d (MaxSpecLen)", len(s), MaxSpecLen)
	}
	if !utf8.ValidString(s) {
		return Spec{}, specError("the model spec is not valid UTF-8")
	}
	prov, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Spec{}, specError("%q has no ':' between provider and model", s)
	}
	var sp Spec
	switch Provider(prov) {
	case ProviderOpenAI, ProviderAnthropic:
		sp.Provider = Provider(prov)
	default:
		return Spec{}, specError("unknown provider %q", prov)
	}
	name := rest
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		name, sp.BaseURL = rest[:i], rest[i+1:]
		if err := checkBaseURL(sp.BaseURL); err != nil {
			return Spec{}, specError("base URL %q: %v", sp.BaseURL, err)
		}
	}
	if err := checkModelName(name); err != nil {
		return Spec{}, specError("model name %q: %v", name, err)
	}
	sp.Model = name
	return sp, nil
}

// MustParseSpec is ParseSpec for specs written in the program; it panics
// on an error.
func MustParseSpec(s string) Spec {
	sp, err := ParseSpec(s)
	if err != nil {
		panic(err)
	}
	return sp
}

// String writes the spec back in the form ParseSpec reads.
func (s Spec) String() string {
	out := string(s.Provider) + ":" + s.Model
	if s.BaseURL != "" {
		out += "@" + s.BaseURL
	}
	return out
}

// BaseURLOrDefault returns BaseURL, or the provider's default.
func (s Spec) BaseURLOrDefault() string {
	switch {
	case s.BaseURL != "":
		return s.BaseURL
	case s.Provider == ProviderAnthropic:
		return DefaultAnthropicBaseURL
	default:
		return DefaultOpenAIBaseURL
	}
}

func specError(format string, args ...any) *Error {
	e := newError(CodeInvalidRequest, nil, format, args...)
	e.Hint = "Write the model as PROVIDER:MODEL[@BASE_URL] with PROVIDER openai or anthropic, as in openai:gpt-4o-mini@http://127.0.0.1:11434/v1 or anthropic:claude-haiku-4-5"
	return e
}

func checkModelName(name string) error {
	switch {
	case name == "":
		return errors.New("it is empty")
	case len(name) > MaxModelNameLen:
		return fmt.Errorf("it is %d bytes, over the limit of %d (MaxModelNameLen)", len(name), MaxModelNameLen)
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("it holds %q, and model names have no spaces or control characters", r)
		}
	}
	return nil
}

func checkBaseURL(raw string) error {
	if raw == "" {
		return errors.New("it is empty; leave out the '@' for the provider's default")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("it does not parse as a URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("the scheme must be http or https")
	case u.Host == "" || u.Hostname() == "":
		return errors.New("it has no host")
	case u.User != nil:
		return errors.New("it holds user info; give keys through the environment instead")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(raw, "#?"):
		return errors.New("it holds a query or fragment")
	}
	for _, r := range raw {
		if r <= ' ' || r == 0x7f || r > unicode.MaxASCII {
			return errors.New("it holds a space, control or non-ASCII character")
		}
	}
	return nil
}
