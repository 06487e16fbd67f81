package model

import (
	"fmt"
	"log/slog"
	"os"
)

// APIKey holds a provider's key. Every way of printing it (String,
// GoString, %v and friends, slog, JSON, text) shows a mask, so that a key
// never reaches a log line, an audit record or a model by accident. The
// zero APIKey is "no key".
type APIKey struct{ v string }

// Environment variables the keys are read from when none is given.
const (
	EnvOpenAIKey    = "OPENAI_API_KEY"
	EnvAnthropicKey = "ANTHROPIC_API_KEY"
)

// NewAPIKey wraps a key.
func NewAPIKey(s string) APIKey { return APIKey{v: s} }

// KeyFromEnv reads a key from the environment variable name.
func KeyFromEnv(name string) APIKey { return APIKey{v: os.Getenv(name)} }

// IsSet reports whether the key is non-empty.
func (k APIKey) IsSet() bool { return k.v != "" }

// reveal is the one way to the key's text, kept unexported so that only
// the code that sends it can reach it.
func (k APIKey) reveal() string { return k.v }

const keyMask = "[REDACTED]"

func (k APIKey) mask() string {
	if k.v == "" {
		return "[unset]"
	}
	return keyMask
}

func (k APIKey) String() string                { return k.mask() }
func (k APIKey) GoString() string              { return "model.APIKey(" + k.mask() + ")" }
func (k APIKey) LogValue() slog.Value          { return slog.StringValue(k.mask()) }
func (k APIKey) MarshalText() ([]byte, error)  { return []byte(k.mask()), nil }
func (k APIKey) Format(f fmt.State, verb rune) { fmt.Fprint(f, k.mask()) }
