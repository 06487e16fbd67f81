package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The kinds of definition an upstream MCP server offers, and a Pin keeps.
const (
	PinTool     = "tool"
	PinPrompt   = "prompt"
	PinResource = "resource"
)

// The bounds of one pin: an upstream that offers more is refused, never
// stored in part.
const (
	// MaxPinDefinitionBytes is the most bytes of one definition (name,
	// description, schema, annotations) as canonical JSON.
	MaxPinDefinitionBytes = 256 << 10
	// MaxPinNameBytes is the most bytes of a server's or a definition's
	// name, and of each of a pin's other strings: its hashes, its
	// signals and AcceptedBy.
	MaxPinNameBytes = 256
	// MaxPinSignals is the most signals a pin keeps of either of its
	// definitions: the scanner names a handful, so more means something
	// is wrong, not a definition worth keeping.
	MaxPinSignals = 64
)

// PinKey names one definition of one upstream server.
type PinKey struct {
	Server string `json:"server"`
	Kind   string `json:"kind"` // PinTool, PinPrompt or PinResource
	Name   string `json:"name"`
}

// Pin is what the gateway trusts of one upstream definition: the first
// definition it saw, or the one a person accepted since, by hash. A
// definition the upstream offers that differs from it waits in Seen until
// a person accepts it; until then the gateway disables what it defines.
type Pin struct {
	PinKey
	// Hash is the SHA-256 (hex) of Definition, the canonical JSON of the
	// pinned definition.
	Hash       string          `json:"hash"`
	Definition json.RawMessage `json:"definition"`
	// Accepted is false for a definition first seen flagged (Signals):
	// pinned, so that a change to it is still noticed, but hidden until a
	// person accepts it.
	Accepted bool     `json:"accepted"`
	Signals  []string `json:"signals,omitempty"`
	// SeenHash and Seen are the latest definition the upstream offered
	// when it differs from the pinned one; empty otherwise. SeenSignals
	// are the scanner's signals on it.
	SeenHash    string          `json:"seen_hash,omitempty"`
	Seen        json.RawMessage `json:"seen,omitempty"`
	SeenSignals []string        `json:"seen_signals,omitempty"`
	// AcceptedBy names the person who accepted Definition; "" for a
	// definition pinned when first seen.
	AcceptedBy string    `json:"accepted_by,omitempty"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	// Version counts the pin's updates: UpdatePin replaces only the
	// version the caller read.
	Version int64 `json:"version"`
}

// Validate refuses a key no backend may hold: an empty or over-long server
// or name, one that is not UTF-8 or holds a NUL byte (the byte every
// backend may use to join a key's parts, and one Postgres text refuses),
// or an unknown kind.
func (k PinKey) Validate() error {
	switch k.Kind {
	case PinTool, PinPrompt, PinResource:
	default:
		return fmt.Errorf("unknown pin kind %q: want %s, %s or %s", k.Kind, PinTool, PinPrompt, PinResource)
	}
	if err := validPinString("the server", k.Server, false); err != nil {
		return err
	}
	return validPinString("the "+k.Kind+" name", k.Name, false)
}

// ValidPinServer refuses a server ListPins is asked for that no pin can
// have: one PinKey.Validate would refuse, except "" (every server).
func ValidPinServer(server string) error {
	return validPinString("the server", server, true)
}

// validPinString refuses a string of a pin that is over MaxPinNameBytes,
// not UTF-8 or holds a NUL byte; an empty one unless empty is allowed.
func validPinString(what, s string, empty bool) error {
	switch {
	case s == "" && !empty:
		return fmt.Errorf("%s is empty", what)
	case len(s) > MaxPinNameBytes:
		return fmt.Errorf("%s is %d bytes, over the limit of %d (store.MaxPinNameBytes)", what, len(s), MaxPinNameBytes)
	case !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%s %q is not UTF-8 text without NUL bytes", what, s)
	}
	return nil
}

// Validate refuses a pin no backend may store, which AddPin and UpdatePin
// refuse whole: a key PinKey.Validate refuses; an empty hash or
// definition; a definition, or a seen one, that is not JSON or is over
// MaxPinDefinitionBytes; a seen definition without its hash or a hash
// without it; more than MaxPinSignals signals, or an empty one; a hash,
// signal or AcceptedBy over MaxPinNameBytes, not UTF-8 or holding a NUL
// byte; a zero Created or Updated.
// Version is not checked: AddPin sets it, UpdatePin compares it.
func (p Pin) Validate() error {
	if err := p.PinKey.Validate(); err != nil {
		return err
	}
	for _, d := range []struct {
		what  string
		def   json.RawMessage
		empty bool
	}{{"the definition", p.Definition, false}, {"the seen definition", p.Seen, true}} {
		switch {
		case len(d.def) == 0 && d.empty:
		case len(d.def) == 0:
			return fmt.Errorf("%s is empty", d.what)
		case len(d.def) > MaxPinDefinitionBytes:
			return fmt.Errorf("%s is %d bytes, over the limit of %d (store.MaxPinDefinitionBytes)", d.what, len(d.def), MaxPinDefinitionBytes)
		case !json.Valid(d.def):
			return fmt.Errorf("%s is not JSON", d.what)
		}
	}
	if (p.SeenHash == "") != (len(p.Seen) == 0) {
		return errors.New("the seen definition and its hash go together: set both or neither")
	}
	for _, s := range []struct {
		what  string
		s     string
		empty bool
	}{{"the hash", p.Hash, false}, {"the seen hash", p.SeenHash, true}, {"accepted by", p.AcceptedBy, true}} {
		if err := validPinString(s.what, s.s, s.empty); err != nil {
			return err
		}
	}
	for _, list := range []struct {
		what    string
		signals []string
	}{{"signals", p.Signals}, {"seen signals", p.SeenSignals}} {
		if len(list.signals) > MaxPinSignals {
			return fmt.Errorf("%d %s, over the limit of %d (store.MaxPinSignals)", len(list.signals), list.what, MaxPinSignals)
		}
		for i, s := range list.signals {
			if err := validPinString(fmt.Sprintf("%s[%d]", list.what, i), s, false); err != nil {
				return err
			}
		}
	}
	if p.Created.IsZero() || p.Updated.IsZero() {
		return errors.New("created and updated must be set")
	}
	return nil
}

// ErrPinChanged is UpdatePin's answer when the stored pin is no longer
// the version the caller read: read it again and decide again.
var ErrPinChanged = errors.New("store: the pin changed since it was read")

// Pins holds the gateway's pins. Every method is safe for concurrent use,
// also across processes sharing the same backing store.
type Pins interface {
	// AddPin stores p, with Version 1, when there is no pin of its key,
	// and returns the pin stored: p, or the one that was there first
	// (added false). Two concurrent adds of one key store exactly one.
	// A pin that Validate refuses is an error, and nothing is stored.
	AddPin(ctx context.Context, p Pin) (stored Pin, added bool, err error)
	// Pin returns the pin of k; ErrNotFound when there is none. Every
	// method refuses a key that PinKey.Validate refuses, and ListPins a
	// server that is not "" and not a valid key's.
	Pin(ctx context.Context, k PinKey) (Pin, error)
	// ListPins lists the pins, only server's when it is not "", ordered
	// by server, kind and name.
	ListPins(ctx context.Context, server string) ([]Pin, error)
	// UpdatePin replaces the pin of p's key when the stored one's Version
	// is p.Version, storing p with Version p.Version+1, and returns it;
	// ErrPinChanged when the stored version differs, ErrNotFound when
	// there is no pin. Created stays as first stored. A pin that
	// Validate refuses is an error, and nothing changes.
	UpdatePin(ctx context.Context, p Pin) (Pin, error)
	// DeletePin removes the pin of k (accepting whatever the upstream
	// offers next as if first seen); ErrNotFound when there is none.
	DeletePin(ctx context.Context, k PinKey) error
}
