package gate

import (
	"fmt"
	"strings"
)

// Protections is a set of the protections a gate can run without, each
// named in Options.Without. A protection whose field is left out and not
// named there makes New fail, so that none is lost to a forgotten field.
type Protections uint8

const (
	// WithoutAudit: no call is written to an audit log, so nothing
	// records what ran, what was refused, or why (Options.Audit).
	WithoutAudit Protections = 1 << iota
	// WithoutLedger: calls with a write or external effect are not kept
	// exactly-once, so a repeated or retried call runs its effect again
	// (Options.Ledger).
	WithoutLedger
	// WithoutRedactor: secrets and personal data in results and error
	// messages reach the caller unmasked; only Options.Secrets are still
	// masked (Options.Redactor).
	WithoutRedactor
	// WithoutSessions: the kill switch is not read, so a killed session,
	// or airlock kill, stops nothing this gate runs (Options.Sessions).
	WithoutSessions
	// WithoutApprovalKey: the hashes approvals are found by are unkeyed,
	// so whoever can write the approvals store can plant an approval that
	// lets a call run (Options.ApprovalKey).
	WithoutApprovalKey
)

// protections names each protection and the Options field that provides
// it.
var protections = []struct {
	without Protections
	name    string // the constant, for messages
	field   string // the Options field
	set     func(*Options) bool
}{
	{WithoutAudit, "WithoutAudit", "Audit", func(o *Options) bool { return o.Audit != nil }},
	{WithoutLedger, "WithoutLedger", "Ledger", func(o *Options) bool { return o.Ledger != nil }},
	{WithoutRedactor, "WithoutRedactor", "Redactor", func(o *Options) bool { return o.Redactor != nil }},
	{WithoutSessions, "WithoutSessions", "Sessions", func(o *Options) bool { return o.Sessions != nil }},
	{WithoutApprovalKey, "WithoutApprovalKey", "ApprovalKey", func(o *Options) bool { return len(o.ApprovalKey) > 0 }},
}

// ProtectionError is New's refusal of Options that leave protections out
// without naming them in Without (Missing), or that set protections and
// name them there too (Ambiguous).
type ProtectionError struct {
	Missing   Protections
	Ambiguous Protections
}

func (e *ProtectionError) Error() string {
	var msgs []string
	if fields, names := e.Missing.describe(); fields != "" {
		msgs = append(msgs, fields+": not set; set each, or run without it by naming it in Options.Without: "+names)
	}
	if fields, names := e.Ambiguous.describe(); fields != "" {
		msgs = append(msgs, fields+": set, and switched off in Options.Without by "+names+"; keep one of the two")
	}
	return "gate: " + strings.Join(msgs, "; ")
}

// describe lists the fields of the protections in ps and the constants
// that switch them off, for messages.
func (ps Protections) describe() (fields, names string) {
	var fs, ns []string
	for _, p := range protections {
		if ps&p.without != 0 {
			fs, ns = append(fs, "Options."+p.field), append(ns, "gate."+p.name)
		}
	}
	return strings.Join(fs, ", "), strings.Join(ns, " | ")
}

// checkProtections refuses Options that leave a protection out without
// naming it in Without, that set one and name it too, or whose Without
// names no protection.
func checkProtections(o *Options) error {
	var e ProtectionError
	var known Protections
	for _, p := range protections {
		known |= p.without
		switch set, off := p.set(o), o.Without&p.without != 0; {
		case !set && !off:
			e.Missing |= p.without
		case set && off:
			e.Ambiguous |= p.without
		}
	}
	if u := o.Without &^ known; u != 0 {
		return fmt.Errorf("gate: Options.Without holds %#x, which names no protection; name only the gate.Without constants", uint8(u))
	}
	if e.Missing|e.Ambiguous != 0 {
		return &e
	}
	return nil
}
