package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
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
	// MaxPinNameBytes is the most bytes of a server's or a definition's name.
	MaxPinNameBytes = 256
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

// ErrPinChanged is UpdatePin's answer when the stored pin is no longer
// the version the caller read: read it again and decide again.
var ErrPinChanged = errors.New("store: the pin changed since it was read")

// Pins holds the gateway's pins. Every method is safe for concurrent use,
// also across processes sharing the same backing store.
type Pins interface {
	// AddPin stores p, with Version 1, when there is no pin of its key,
	// and returns the pin stored: p, or the one that was there first
	// (added false). Two concurrent adds of one key store exactly one.
	AddPin(ctx context.Context, p Pin) (stored Pin, added bool, err error)
	// Pin returns the pin of k; ErrNotFound when there is none.
	Pin(ctx context.Context, k PinKey) (Pin, error)
	// ListPins lists the pins, only server's when it is not "", ordered
	// by server, kind and name.
	ListPins(ctx context.Context, server string) ([]Pin, error)
	// UpdatePin replaces the pin of p's key when the stored one's Version
	// is p.Version, storing p with Version p.Version+1, and returns it;
	// ErrPinChanged when the stored version differs, ErrNotFound when
	// there is no pin.
	UpdatePin(ctx context.Context, p Pin) (Pin, error)
	// DeletePin removes the pin of k (accepting whatever the upstream
	// offers next as if first seen); ErrNotFound when there is none.
	DeletePin(ctx context.Context, k PinKey) error
}
