package redact

import (
	"encoding/json"
	"fmt"
	"log/slog"
)

// Secret holds a credential that must never be printed, logged or
// serialised by accident: String, GoString, every fmt verb, slog and JSON
// all show SecretMask. Reveal is the one way to the value, so that every
// use is easy to find.
type Secret string

// SecretMask is what a Secret shows instead of its value.
const SecretMask = "[REDACTED]"

// Reveal returns the value.
func (s Secret) Reveal() string { return string(s) }

// String returns SecretMask.
func (s Secret) String() string { return SecretMask }

// GoString returns SecretMask quoted, for %#v.
func (s Secret) GoString() string { return `"` + SecretMask + `"` }

// Format writes SecretMask for every verb and flag, so %x or %q cannot
// show the value either.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' || verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, s.GoString())
		return
	}
	fmt.Fprint(f, SecretMask)
}

// LogValue masks the value in log/slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(SecretMask) }

// MarshalJSON writes SecretMask as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(SecretMask) }

// UnmarshalJSON reads a JSON string into the Secret, so configuration can
// hold one; it is the writing side that masks.
func (s *Secret) UnmarshalJSON(b []byte) error {
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Secret(v)
	return nil
}

// MarshalText masks the value wherever text encoding is used (YAML, XML,
// map keys).
func (s Secret) MarshalText() ([]byte, error) { return []byte(SecretMask), nil }
