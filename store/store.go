// Package store defines airlock's durable state behind one set of
// interfaces, so that the embedded SQLite file, Postgres and Redis can each
// hold it. Drivers live in leaf packages (store/sqlite, ...) that the core
// never imports. It holds five kinds of state:
//
//   - Approvals: pending approvals, calls the policy asked a person about,
//     each bound to the exact call and expiring by itself, and remembered
//     ones, which let the same call run again for a session or a
//     workspace until they expire or are revoked;
//   - Sessions: each session's step, spent budget, mode, kill flag and
//     flagged bit, the values that reached it and from where (its
//     observations, the gate's provenance), and one global kill flag;
//   - Ledger: the idempotency ledger's entries (package ledger builds the
//     exactly-once promise on them);
//   - Runs: the agent loop's checkpoints, so that a run parked on an
//     approval resumes in another process;
//   - Pins: the gateway's pinned definitions of its upstream servers'
//     tools, prompts and resources, so that a definition changed behind
//     its back waits for a person, in every replica.
//
// A Backend is all five behind one handle; package storeurl opens one
// from a URL (sqlite:PATH, postgres://..., redis://...).
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// DefaultApprovalTTL is how long a pending or approved approval lives.
const DefaultApprovalTTL = 15 * time.Minute

// Status is where an approval stands.
type Status string

const (
	StatusPending  Status = "pending"  // waiting for a person
	StatusApproved Status = "approved" // approved; the next identical call may run, once
	StatusDenied   Status = "denied"   // denied by a person
	StatusUsed     Status = "used"     // approved and consumed by the call it was for
	StatusExpired  Status = "expired"  // not decided, or not used, in time
)

// Approval is one asked call: the exact tool and canonical arguments a
// person approves or denies.
type Approval struct {
	ID       string          `json:"id"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`      // canonical JSON (see package canon)
	ArgsHash string          `json:"args_hash"` // canon.Bind of the call as the gate binds it: what a call is matched by
	// SessionHash and WorkspaceHash are what a remembered approval of
	// this call is found by, in ScopeSession and ScopeWorkspace (see
	// Remembered); empty when the call cannot be remembered so.
	SessionHash   string    `json:"session_hash,omitempty"`
	WorkspaceHash string    `json:"workspace_hash,omitempty"`
	Session       string    `json:"session,omitempty"`
	Role          string    `json:"role,omitempty"`
	Mode          string    `json:"mode,omitempty"`
	Rule          string    `json:"rule,omitempty"`   // the rule that asked
	Reason        string    `json:"reason,omitempty"` // why it asked
	Status        Status    `json:"status"`
	Created       time.Time `json:"created"`
	Expires       time.Time `json:"expires"`
	Decided       time.Time `json:"decided,omitzero"`
	DecidedBy     string    `json:"decided_by,omitempty"`
}

// Errors callers branch on.
var (
	ErrNotFound   = errors.New("store: not found")
	ErrNotPending = errors.New("store: the approval is not pending (decided or expired)")
)

// Approvals holds approvals. Every method is safe for concurrent use, also
// across processes sharing the same backing store.
type Approvals interface {
	// CreateApproval stores a new pending approval; a.ID must be unique.
	CreateApproval(ctx context.Context, a Approval) error
	// Approval returns one approval, its status as of now (an expired one
	// reads as StatusExpired). ErrNotFound when there is none.
	Approval(ctx context.Context, id string, now time.Time) (Approval, error)
	// PendingApprovals lists the approvals pending at now, oldest first.
	PendingApprovals(ctx context.Context, now time.Time) ([]Approval, error)
	// DecideApproval approves or denies a pending, unexpired approval.
	// ErrNotFound otherwise, or ErrNotPending with the approval as it
	// stands at now (approved, denied, used or expired), so that the
	// person can be told what became of it.
	DecideApproval(ctx context.Context, id string, approve bool, by string, now time.Time) (Approval, error)
	// ConsumeApproval finds an approved, unexpired approval for exactly
	// this tool and argument hash, marks it used and returns it; ok is
	// false when there is none. Two concurrent calls never consume the same
	// approval.
	ConsumeApproval(ctx context.Context, tool, argsHash string, now time.Time) (a Approval, ok bool, err error)
	// Remembering: approvals a person asked to be remembered for the
	// rest of a session, or for a workspace.
	Remembering
}
