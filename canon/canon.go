// Package canon writes JSON in one canonical form, so that two encodings
// of the same value compare, and hash, equal: object keys sorted, no
// insignificant white space, numbers as written, strings in encoding/json's
// escaping. An approval, and later the idempotency ledger, are bound to a
// call through this form.
package canon

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"slices"
)

// JSON returns the canonical form of a JSON value.
func JSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canon: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("canon: more than one JSON value")
	}
	return appendValue(nil, v)
}

func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			kb, _ := json.Marshal(k)
			b = append(b, kb...)
			b = append(b, ':')
			var err error
			if b, err = appendValue(b, x[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	default: // string, json.Number, bool, nil
		eb, err := json.Marshal(x)
		if err != nil {
			return nil, fmt.Errorf("canon: %w", err)
		}
		return append(b, eb...), nil
	}
}

// Bind returns the hex hash that binds parts together, each ended by a NUL
// so that no two lists of parts run together: HMAC-SHA256 under key, or
// plain SHA-256 when key is nil. An approval (and later a ledger entry) is
// found by the Bind of its tool, canonical arguments and context.
func Bind(key []byte, parts ...string) string {
	var h hash.Hash
	if key != nil {
		h = hmac.New(sha256.New, key)
	} else {
		h = sha256.New()
	}
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
