package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Scope is how far a person's approval reaches.
type Scope string

const (
	// ScopeOnce lets the one call run once, in its session (the default).
	ScopeOnce Scope = "once"
	// ScopeSession lets the same call (tool, canonical arguments, role,
	// mode, rule and resolved files) run again and again for the rest of
	// its session.
	ScopeSession Scope = "session"
	// ScopeWorkspace lets the same call run in the same workspace, in any
	// session, as a standing rule.
	ScopeWorkspace Scope = "workspace"
)

// ParseScope reads a scope's name; the empty string is ScopeOnce.
func ParseScope(s string) (Scope, error) {
	switch sc := Scope(s); sc {
	case "", ScopeOnce:
		return ScopeOnce, nil
	case ScopeSession, ScopeWorkspace:
		return sc, nil
	}
	return "", fmt.Errorf("scope %q: want once, session or workspace", s)
}

// RememberFor is how long a remembered approval stands unless revoked
// first: long enough to stop asking about a routine call for a month of
// work, short enough that a forgotten one lapses by itself.
const RememberFor = 30 * 24 * time.Hour

// MaxRemembered bounds the remembered approvals in force at once in one
// store, so that no listing of them, nor the check of each asked call,
// grows without end. RememberApproval beyond it fails with
// ErrTooManyRemembered.
const MaxRemembered = 1000

// Remembered is a standing approval: a person approved a call with
// --remember session or workspace, and each later call of exactly the same
// shape within its scope runs without asking, until it expires or is
// revoked. It is found by Hash, which the gate keys as it keys an
// approval's ArgsHash, so one written into the store by someone without
// the key matches no call.
type Remembered struct {
	ID         string          `json:"id"` // the approval it was made from
	Scope      Scope           `json:"scope"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`              // canonical JSON
	Hash       string          `json:"hash"`              // the Approval's SessionHash or WorkspaceHash
	Session    string          `json:"session,omitempty"` // where it was approved; for ScopeSession the only session it covers
	Role       string          `json:"role,omitempty"`
	Mode       string          `json:"mode,omitempty"`
	Rule       string          `json:"rule,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	ApprovedBy string          `json:"approved_by,omitempty"`
	Created    time.Time       `json:"created"`
	Expires    time.Time       `json:"expires"`
	Uses       int64           `json:"uses"` // calls it let run
	LastUsed   time.Time       `json:"last_used,omitzero"`
	Revoked    time.Time       `json:"revoked,omitzero"`
	RevokedBy  string          `json:"revoked_by,omitempty"`
}

// InForce says whether r lets its call run at now: not revoked, not
// expired.
func (r Remembered) InForce(now time.Time) bool {
	return r.Revoked.IsZero() && now.Before(r.Expires)
}

// ScopeHash is the hash a remembered approval of scope made from a is
// found by; "" when a carries none (asked with no workspace, or by an
// older airlock) or scope is not one a remembered approval can have.
func (a Approval) ScopeHash(scope Scope) string {
	switch scope {
	case ScopeSession:
		return a.SessionHash
	case ScopeWorkspace:
		return a.WorkspaceHash
	}
	return ""
}

// Errors of remembered approvals callers branch on.
var (
	// ErrCannotRemember: the approval carries no hash for the scope asked
	// for, so a remembered approval of it could match nothing.
	ErrCannotRemember = errors.New("store: the approval cannot be remembered in that scope (it was asked with no workspace, or by an older airlock)")
	// ErrNotInForce: the remembered approval is revoked or expired.
	ErrNotInForce = errors.New("store: the remembered approval is no longer in force (revoked or expired)")
	// ErrTooManyRemembered: MaxRemembered are in force already.
	ErrTooManyRemembered = errors.New("store: too many remembered approvals in force (store.MaxRemembered)")
)

// Remembering holds remembered approvals beside the one-shot ones. Every
// method is safe for concurrent use, also across processes sharing the
// same backing store.
type Remembering interface {
	// RememberApproval approves the pending, unexpired approval id, as
	// DecideApproval does, and in the same step keeps a remembered
	// approval of scope (ScopeSession or ScopeWorkspace) for its call,
	// found by a.ScopeHash(scope), until expires. It returns the
	// approval as decided. ErrNotFound; ErrNotPending with the approval
	// as it stands; ErrCannotRemember or ErrTooManyRemembered, deciding
	// nothing.
	RememberApproval(ctx context.Context, id string, scope Scope, by string, now, expires time.Time) (Approval, error)
	// UseRemembered finds the oldest remembered approval in force at now
	// of scope for exactly this tool and hash, counts the use and returns
	// it; ok is false when there is none. An empty hash matches nothing.
	UseRemembered(ctx context.Context, scope Scope, tool, hash string, now time.Time) (r Remembered, ok bool, err error)
	// RememberedApprovals lists the remembered approvals in force at now,
	// oldest first, at most MaxRemembered.
	RememberedApprovals(ctx context.Context, now time.Time) ([]Remembered, error)
	// RevokeRemembered ends the remembered approval id at now, recording
	// by, and returns it. ErrNotFound; ErrNotInForce with it as it stands.
	RevokeRemembered(ctx context.Context, id, by string, now time.Time) (Remembered, error)
}

// CheckRemember refuses what no backend may remember: a scope other than
// ScopeSession or ScopeWorkspace, a zero now, or an expiry not after now.
func CheckRemember(scope Scope, now, expires time.Time) error {
	switch {
	case scope != ScopeSession && scope != ScopeWorkspace:
		return fmt.Errorf("scope %q: a remembered approval is of scope session or workspace", scope)
	case now.IsZero():
		return errors.New("now is the zero time")
	case !expires.After(now):
		return fmt.Errorf("the expiry %v is not after now %v", expires, now)
	}
	return nil
}
