package gate_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"airlock.dev/airlock/audit"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/tools"
)

// bare runs without every protection, for tests of stages that need none
// of them.
const bare = gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey

// each is every protection with the field that provides it and the
// constant that switches it off, as New's errors name them.
var each = []struct {
	without     gate.Protections
	field, name string
	unset       func(*gate.Options)
}{
	{gate.WithoutAudit, "Options.Audit", "gate.WithoutAudit", func(o *gate.Options) { o.Audit = nil }},
	{gate.WithoutLedger, "Options.Ledger", "gate.WithoutLedger", func(o *gate.Options) { o.Ledger = nil }},
	{gate.WithoutRedactor, "Options.Redactor", "gate.WithoutRedactor", func(o *gate.Options) { o.Redactor = nil }},
	{gate.WithoutSessions, "Options.Sessions", "gate.WithoutSessions", func(o *gate.Options) { o.Sessions = nil }},
	{gate.WithoutApprovalKey, "Options.ApprovalKey", "gate.WithoutApprovalKey", func(o *gate.Options) { o.ApprovalKey = nil }},
}

// protected returns Options that set every protection.
func protected(t *testing.T) gate.Options {
	t.Helper()
	db, led := stateLedger(t)
	log, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	rd, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return gate.Options{Policy: policy.Default(), Audit: log, Ledger: led, Redactor: rd, Sessions: db, Approvals: db,
		ApprovalKey: []byte("test key")}
}

func calculator(t *testing.T) *tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	if err := reg.Register(tools.Calculate()); err != nil {
		t.Fatal(err)
	}
	return reg
}

// refusal returns New's *ProtectionError for o, failing the test if New
// accepts o or fails otherwise.
func refusal(t *testing.T, reg *tool.Registry, o *gate.Options) *gate.ProtectionError {
	t.Helper()
	_, err := gate.New(reg, o)
	var pe *gate.ProtectionError
	if !errors.As(err, &pe) {
		t.Fatalf("New: %v, want a *gate.ProtectionError", err)
	}
	return pe
}

// TestNewRefusesMissingProtection: a protection left out, and not named
// in Without, is refused with an error that names its field and the
// constant that switches it off; named there, the same Options are
// accepted.
func TestNewRefusesMissingProtection(t *testing.T) {
	reg := calculator(t)
	all := protected(t)
	if _, err := gate.New(reg, &all); err != nil {
		t.Fatalf("every protection set: %v", err)
	}
	for _, p := range each {
		o := all
		p.unset(&o)
		pe := refusal(t, reg, &o)
		if pe.Missing != p.without || pe.Ambiguous != 0 {
			t.Errorf("%s left out: missing %#x, ambiguous %#x; want missing %#x", p.field, pe.Missing, pe.Ambiguous, p.without)
		}
		if msg := pe.Error(); !strings.Contains(msg, p.field) || !strings.Contains(msg, p.name) {
			t.Errorf("%s left out: %q does not name the field and %s", p.field, msg, p.name)
		}
		o.Without = p.without
		if _, err := gate.New(reg, &o); err != nil {
			t.Errorf("%s left out and named in Without: %v", p.field, err)
		}
	}
}

// TestNewRefusesAmbiguousProtection: a protection both set and named in
// Without is refused.
func TestNewRefusesAmbiguousProtection(t *testing.T) {
	reg := calculator(t)
	all := protected(t)
	for _, p := range each {
		o := all
		o.Without = p.without
		pe := refusal(t, reg, &o)
		if pe.Ambiguous != p.without || pe.Missing != 0 {
			t.Errorf("%s set and named: ambiguous %#x, missing %#x; want ambiguous %#x", p.field, pe.Ambiguous, pe.Missing, p.without)
		}
		if msg := pe.Error(); !strings.Contains(msg, p.field) || !strings.Contains(msg, p.name) {
			t.Errorf("%s set and named: %q does not name the field and %s", p.field, msg, p.name)
		}
	}
}

// TestNewRefusesNilOptions: nil Options leave every protection out;
// Options that name every one in Without are accepted.
func TestNewRefusesNilOptions(t *testing.T) {
	reg := calculator(t)
	if pe := refusal(t, reg, nil); pe.Missing != bare {
		t.Errorf("nil Options: missing %#x, want %#x", pe.Missing, bare)
	}
	if _, err := gate.New(reg, &gate.Options{Without: bare}); err != nil {
		t.Errorf("every protection named in Without: %v", err)
	}
}

// TestNewRefusesUnknownProtection: a Without bit that names no protection
// is refused, not ignored.
func TestNewRefusesUnknownProtection(t *testing.T) {
	if _, err := gate.New(calculator(t), &gate.Options{Without: bare | 1<<7}); err == nil {
		t.Error("New accepted a Without that names no protection")
	}
}
