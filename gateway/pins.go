package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pmezard/go-difflib/difflib"

	"airlock.dev/airlock/canon"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/untrusted"
)

// definition is the canonical JSON of an upstream definition (a tool's
// name, title, description, schemas, annotations: everything the upstream
// says of it) and its SHA-256, what a pin holds.
func definition(v any) (json.RawMessage, string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, "", err
	}
	c, err := canon.JSON(raw)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(c)
	return c, hex.EncodeToString(sum[:]), nil
}

// definitionText is the text of a tool's definition a model reads, piece
// by piece: its title and description, and every description and title
// inside its schemas (a common place to hide instructions), for the
// scanner.
func definitionText(t *sdk.Tool) []string {
	out := []string{t.Title, t.Description}
	if t.Annotations != nil {
		out = append(out, t.Annotations.Title)
	}
	for _, s := range []any{t.InputSchema, t.OutputSchema} {
		raw, _ := json.Marshal(s)
		var v any
		if json.Unmarshal(raw, &v) == nil {
			out = schemaText(out, v)
		}
	}
	return out
}

// schemaText appends every description and title string in a schema.
func schemaText(out []string, v any) []string {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if s, ok := v[k].(string); ok && (k == "description" || k == "title") {
				out = append(out, s)
			} else {
				out = schemaText(out, v[k])
			}
		}
	case []any:
		for _, x := range v {
			out = schemaText(out, x)
		}
	}
	return out
}

// scanPieces scans each piece of a definition's text on its own: a
// definition is flagged when one piece is. The pieces are short and
// unrelated (a field's description, the next field's), and scanned as one
// text their run of imperative phrases read to the scanner's model as
// instructions where none is.
func scanPieces(pieces []string) (flagged bool, signals []string) {
	for _, p := range pieces {
		if strings.TrimSpace(p) == "" {
			continue
		}
		if rep := untrusted.Scan(p); rep.Flagged {
			flagged = true
			for _, n := range rep.Names() {
				if !slices.Contains(signals, n) {
					signals = append(signals, n)
				}
			}
		}
	}
	slices.Sort(signals)
	return flagged, signals
}

// reconcile compares one listed tool with its pin, pinning it when it is
// the first definition seen, and gives its state and the definition to
// offer (the pinned one).
func (g *Gateway) reconcile(ctx context.Context, server string, t *sdk.Tool) (State, string, *sdk.Tool, error) {
	st, reason, pinned, err := g.reconcileDef(ctx, store.PinKey{Server: server, Kind: store.PinTool, Name: t.Name}, t, definitionText(t))
	if err != nil || pinned == nil {
		return st, reason, t, err
	}
	var p sdk.Tool
	if json.Unmarshal(pinned, &p) != nil {
		return st, reason, t, nil
	}
	return st, reason, &p, nil
}

// reconcileDef compares one listed definition v with the pin of k,
// pinning it when it is the first seen (hidden if a piece of text, what a
// model reads of it, is flagged), and gives its state; for a changed one also
// the pinned definition, which is what the client keeps being shown.
func (g *Gateway) reconcileDef(ctx context.Context, k store.PinKey, v any, text []string) (State, string, json.RawMessage, error) {
	def, hash, err := definition(v)
	if err != nil {
		return StateInvalid, "its definition does not encode: " + err.Error(), nil, nil
	}
	if len(def) > store.MaxPinDefinitionBytes {
		return StateInvalid, fmt.Sprintf("its definition is over %d bytes (store.MaxPinDefinitionBytes)", store.MaxPinDefinitionBytes), nil, nil
	}
	if err := k.Validate(); err != nil {
		return StateInvalid, "its name cannot be pinned: " + err.Error(), nil, nil
	}
	flagged, signals := scanPieces(text)
	now := g.opts.Now()
	pin, added, err := g.opts.Pins.AddPin(ctx, store.Pin{PinKey: k, Hash: hash, Definition: def,
		Accepted: !flagged, Signals: signals, Created: now, Updated: now})
	if err != nil {
		return "", "", nil, fmt.Errorf("gateway: pinning %s %s/%s: %w", k.Kind, k.Server, k.Name, err)
	}
	if added {
		if flagged {
			return StateFlagged, strings.Join(signals, ", "), nil, nil
		}
		g.log.Info("gateway: pinned a definition seen for the first time", "server", k.Server, "kind", k.Kind, "name", k.Name, "hash", hash)
		return StateOffered, "", nil, nil
	}
	if pin.Hash == hash {
		if pin.SeenHash != "" {
			// The upstream offers the pinned definition again; the change
			// it offered before is forgotten.
			pin.SeenHash, pin.Seen, pin.SeenSignals, pin.Updated = "", nil, nil, now
			if _, err := g.opts.Pins.UpdatePin(ctx, pin); err != nil && !errors.Is(err, store.ErrPinChanged) {
				return "", "", nil, fmt.Errorf("gateway: updating the pin of %s/%s: %w", k.Server, k.Name, err)
			}
		}
		if !pin.Accepted {
			return StateFlagged, strings.Join(pin.Signals, ", "), nil, nil
		}
		return StateOffered, "", nil, nil
	}
	if pin.SeenHash != hash {
		pin.SeenHash, pin.Seen, pin.SeenSignals, pin.Updated = hash, def, signals, now
		if _, err := g.opts.Pins.UpdatePin(ctx, pin); err != nil && !errors.Is(err, store.ErrPinChanged) {
			return "", "", nil, fmt.Errorf("gateway: recording the change of %s/%s: %w", k.Server, k.Name, err)
		}
		g.log.Warn("gateway: an upstream changed a pinned definition; it is disabled until a person accepts the change",
			"server", k.Server, "kind", k.Kind, "name", k.Name, "pinned", pin.Hash, "seen", hash)
	}
	return StateChanged, fmt.Sprintf("pinned %s, now %s", ShortHash(pin.Hash), ShortHash(hash)), pin.Definition, nil
}

// ShortHash is the first 12 digits of a hash, as people are shown it.
func ShortHash(hash string) string { return hash[:min(12, len(hash))] }

// PinView is one pin as `airlock gateway pins` shows it.
type PinView struct {
	store.PinKey
	// Tool is the name the client sees, for a tool.
	Tool  string `json:"tool,omitempty"`
	State State  `json:"state"`
	// Signals are the scanner's, on the definition waiting to be accepted.
	Signals []string `json:"signals,omitempty"`
	Hash    string   `json:"hash"`
	// SeenHash and Diff are the change waiting to be accepted.
	SeenHash string `json:"seen_hash,omitempty"`
	Diff     string `json:"diff,omitempty"`
}

// Pins lists the pins with their states, server's only unless it is "".
func Pins(ctx context.Context, pins store.Pins, sep, server string) ([]PinView, error) {
	list, err := pins.ListPins(ctx, server)
	if err != nil {
		return nil, err
	}
	out := make([]PinView, 0, len(list))
	for _, p := range list {
		v := PinView{PinKey: p.PinKey, Hash: p.Hash, SeenHash: p.SeenHash, State: StateOffered}
		if p.Kind == store.PinTool {
			v.Tool = p.Server + sep + p.Name
		}
		switch {
		case p.SeenHash != "":
			v.State, v.Signals, v.Diff = StateChanged, p.SeenSignals, DefinitionDiff(p.Definition, p.Seen)
		case !p.Accepted:
			v.State, v.Signals = StateFlagged, p.Signals
		}
		out = append(out, v)
	}
	return out, nil
}

// DefinitionDiff is the unified diff from one definition to another, each
// as indented JSON.
func DefinitionDiff(from, to json.RawMessage) string {
	a, b := indent(from), indent(to)
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: "pinned", ToFile: "offered", Context: 3,
	})
	if err != nil {
		return ""
	}
	return d
}

// indent writes a definition for a person to read: indented, and with
// <, > and & as themselves, not the \u003c escapes that JSON encoding
// (and so the pin) uses, which would hide the very markup a reviewer
// looks for.
func indent(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw) + "\n"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return string(raw) + "\n"
	}
	return b.String()
}

// ErrNothingToAccept is Accept's answer for a pin that waits on no one.
var ErrNothingToAccept = errors.New("gateway: the pin has no change or flag waiting to be accepted")

// Accept accepts what waits on a pin: the changed definition the upstream
// now offers (which becomes the pin), or a definition pinned flagged. It
// is accepted only if it is still the one the person reviewed (hash, when
// not ""). The gateway offers it from its next start.
func Accept(ctx context.Context, pins store.Pins, k store.PinKey, hash, by string, now func() time.Time) (store.Pin, error) {
	for range 3 {
		p, err := pins.Pin(ctx, k)
		if err != nil {
			return store.Pin{}, err
		}
		switch {
		case p.SeenHash != "":
			if hash != "" && hash != p.SeenHash {
				return store.Pin{}, fmt.Errorf("gateway: the offered definition is now %s, not the %s reviewed: review it again", ShortHash(p.SeenHash), ShortHash(hash))
			}
			p.Hash, p.Definition, p.Signals = p.SeenHash, p.Seen, p.SeenSignals
			p.SeenHash, p.Seen, p.SeenSignals = "", nil, nil
		case !p.Accepted:
			if hash != "" && hash != p.Hash {
				return store.Pin{}, fmt.Errorf("gateway: the pinned definition is %s, not the %s reviewed: review it again", ShortHash(p.Hash), ShortHash(hash))
			}
		default:
			return p, ErrNothingToAccept
		}
		p.Accepted, p.AcceptedBy, p.Updated = true, by, now()
		p, err = pins.UpdatePin(ctx, p)
		if errors.Is(err, store.ErrPinChanged) {
			continue
		}
		return p, err
	}
	return store.Pin{}, store.ErrPinChanged
}
