package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Session is the durable state of one session: how far it went, what it
// spent, the mode it runs in, whether it is killed, and whether it took
// in flagged content. The values that reached it are its observations
// (see Sessions.Observe).
type Session struct {
	ID string `json:"id"`
	// Step counts the steps charged so far.
	Step int64 `json:"step"`
	// Tokens and MicroUSD are the budget spent: model tokens, and money
	// in millionths of a US dollar (exact, never a float).
	Tokens   int64  `json:"tokens"`
	MicroUSD int64  `json:"micro_usd"`
	Mode     string `json:"mode,omitempty"`
	Killed   bool   `json:"killed,omitempty"`
	// Flagged: the session took in content the injection scanner flagged;
	// once set it stays set.
	Flagged bool `json:"flagged,omitempty"`
	// Tainted: the session took in untrusted content (a file, a command's
	// output, a page, an upstream tool's result); once set it stays set,
	// whatever values that content held and whether or not they are
	// still kept.
	Tainted bool `json:"tainted,omitempty"`
	// Truncated: the session took in more observations than
	// MaxObservations and the oldest went, so its observations no longer
	// hold everything that reached it; once set it stays set.
	Truncated bool      `json:"truncated,omitempty"`
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
}

// Observation is one value that reached a session, and where from.
type Observation struct {
	// Seq is set by the store: it starts at 1 and increases with every
	// observation added, across all sessions, and is never reused (not
	// after a prune either); Observe ignores what the caller put here.
	Seq int64 `json:"seq"`
	// Source is SourceUser for the user's own input; anything else names
	// untrusted content (tool:NAME, web, file:PATH, ...).
	Source string `json:"source"`
	// Value is kept and compared as bytes, exactly: a value cut at
	// MaxObservationValue may end inside a UTF-8 sequence.
	Value string `json:"value"`
}

// Marks are what an Observe call sets on its session, for good: nothing
// clears them.
type Marks uint8

const (
	// MarkTainted sets Session.Tainted: the observations come from
	// untrusted content (it is set even when that content held no value).
	MarkTainted Marks = 1 << iota
	// MarkFlagged sets Session.Flagged.
	MarkFlagged
)

// Has reports whether m holds every mark of x.
func (m Marks) Has(x Marks) bool { return m&x == x }

// SourceUser is the source of the user's own input (the same word package
// untrusted uses).
const SourceUser = "user"

// FromUser reports whether o came from the user's own input. A session
// holds a value at most once from the user and once from untrusted
// content, whatever the untrusted source.
func (o Observation) FromUser() bool { return o.Source == SourceUser }

// SessionState is what the gate reads before a call: the session, whether
// it exists, the global kill flag, and the observations after a cursor.
type SessionState struct {
	Session      Session // zero but ID when Exists is false
	Exists       bool
	KillAll      bool
	Observations []Observation // Seq > after, oldest first
}

// Limits on session state, the same in every backend.
const (
	// MaxCounter bounds every counter and budget (2^53-1): the largest
	// integer that every backend, Redis's Lua numbers included, keeps
	// exactly.
	MaxCounter = 1<<53 - 1
	// MaxSessionID bounds the bytes of a session id.
	MaxSessionID = 256
	// MaxMode bounds the bytes of a mode name.
	MaxMode = 64
)

// Limits on a session's observations, the same in every backend.
const (
	// MaxObservations bounds the observations one session keeps; past it
	// the oldest go. It is the sum of package untrusted's defaults for
	// values from untrusted content and from the user (4096 each), so a
	// session keeps in the store what the gate kept in memory.
	MaxObservations = 8192
	// MaxObservationValue bounds the bytes of one value: package
	// untrusted's MaxValueBytes, the longest value it extracts.
	MaxObservationValue = 512
	// MaxObservationSource bounds the bytes of a source name.
	MaxObservationSource = 256
	// MaxObserveBatch bounds the observations one Observe call adds: more
	// than a session keeps would only push out what the same call added.
	MaxObserveBatch = MaxObservations
)

// Charge is what one step adds to a session, and the budget the totals
// must stay within. A zero Max field means that total is not bounded.
type Charge struct {
	Steps, Tokens, MicroUSD          int64
	MaxSteps, MaxTokens, MaxMicroUSD int64
}

// Errors callers branch on.
var (
	// ErrKilled: the session, or every session (the global kill flag), is
	// killed; nothing was charged.
	ErrKilled = errors.New("store: the session is killed")
	// ErrOverBudget: the charge would take a total past its limit; nothing
	// was charged. The error is a *BudgetError.
	ErrOverBudget = errors.New("store: the charge would pass the session's budget")
)

// BudgetError names the limit a refused charge would have passed.
type BudgetError struct {
	Limit       string // "steps", "tokens" or "micro_usd"
	Spent, Add  int64
	Max         int64
	SessionID   string
	SessionStep int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("store: session %q: %s would reach %d, past the limit %d (spent %d, charged %d)",
		e.SessionID, e.Limit, e.Spent+e.Add, e.Max, e.Spent, e.Add)
}

// Is makes errors.Is(err, ErrOverBudget) true.
func (e *BudgetError) Is(target error) bool { return target == ErrOverBudget }

// Validate refuses a charge that no backend may apply: a negative amount or
// limit, or one past MaxCounter.
func (c Charge) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Steps", c.Steps}, {"Tokens", c.Tokens}, {"MicroUSD", c.MicroUSD},
		{"MaxSteps", c.MaxSteps}, {"MaxTokens", c.MaxTokens}, {"MaxMicroUSD", c.MaxMicroUSD},
	} {
		if f.v < 0 || f.v > MaxCounter {
			return fmt.Errorf("charge %s = %d is outside 0 to %d (store.MaxCounter)", f.name, f.v, int64(MaxCounter))
		}
	}
	return nil
}

// Check returns the *BudgetError that charging s with c would cause, or
// nil. A total past MaxCounter is refused as over budget too, so no backend
// ever stores an inexact counter. Every backend applies exactly this rule
// under its lock or script.
func (c Charge) Check(s Session) error {
	for _, f := range []struct {
		name            string
		spent, add, max int64
	}{
		{"steps", s.Step, c.Steps, c.MaxSteps},
		{"tokens", s.Tokens, c.Tokens, c.MaxTokens},
		{"micro_usd", s.MicroUSD, c.MicroUSD, c.MaxMicroUSD},
	} {
		limit := f.max
		if limit == 0 {
			limit = MaxCounter
		}
		if f.spent+f.add > limit {
			return &BudgetError{Limit: f.name, Spent: f.spent, Add: f.add, Max: limit, SessionID: s.ID, SessionStep: s.Step}
		}
	}
	return nil
}

// ValidSessionID refuses an empty or over-long session id.
func ValidSessionID(id string) error {
	if id == "" || len(id) > MaxSessionID {
		return fmt.Errorf("the session id must be 1 to %d bytes (store.MaxSessionID), not %d", MaxSessionID, len(id))
	}
	return nil
}

// Sessions holds session state and the global kill flag. Every method is
// atomic, also across processes sharing the backing store. A session comes
// into being at its first write.
type Sessions interface {
	// Session reads one session. ErrNotFound when it was never written.
	Session(ctx context.Context, id string) (Session, error)
	// ChargeSession adds c to the session's totals in one step, creating
	// the session when it is new, and returns it as it now stands. It
	// refuses, changing nothing, when the session or every session is
	// killed (ErrKilled) or when c.Check fails (a *BudgetError, which
	// is ErrOverBudget); the session is then returned as it stands.
	ChargeSession(ctx context.Context, id string, c Charge, now time.Time) (Session, error)
	// SetSessionMode sets the session's mode.
	SetSessionMode(ctx context.Context, id, mode string, now time.Time) (Session, error)
	// KillSession sets or clears the session's kill flag. A session killed
	// before its first step stays killed when it starts.
	KillSession(ctx context.Context, id string, killed bool, now time.Time) (Session, error)
	// SetKillAll sets or clears the global kill flag, which refuses every
	// charge of every session while set.
	SetKillAll(ctx context.Context, killed bool) error
	// KillAll reads the global kill flag.
	KillAll(ctx context.Context) (bool, error)
	// Observe adds obs to the session's observations, creating the session
	// when it is new; a value the session already holds from the same kind
	// of source (the user, or untrusted) is not added again, keeping its
	// first source and Seq. Past MaxObservations the oldest go, and the
	// session is marked Truncated. marks sets the session's Tainted and
	// Flagged (neither is ever cleared). Observe works on a
	// killed session too (what was read is still known). It counts as a
	// write for KeepSessions. A batch that ValidObservations refuses
	// changes nothing.
	//
	// Within one session, an observation becomes visible only after every
	// observation with a lower Seq, so a reader that follows the Seq of
	// the last one it read (State's after) never skips one.
	Observe(ctx context.Context, id string, obs []Observation, marks Marks, now time.Time) error
	// State reads the session, the global kill flag and the observations
	// with Seq > after, in one consistent read. A session never written
	// (or pruned) reads as Exists false, with no observations and no
	// error.
	State(ctx context.Context, id string, after int64) (SessionState, error)
}

// Backend is every kind of state behind one handle: what storeurl.Open
// returns and what a server hands its gate.
type Backend interface {
	Approvals
	Sessions
	Ledger
	Runs
	Pins
	// Prune deletes what has outlived its retention: finished approvals
	// (approvals past KeepFinished), ledger entries past their Expires,
	// run checkpoints whose Updated is older than now minus KeepRuns, and
	// sessions whose Updated is older than now minus KeepSessions. The
	// global kill flag and the pins are never pruned: a pin forgotten
	// would let its upstream change the definition unnoticed. It returns
	// how many records went.
	Prune(ctx context.Context, now time.Time) (int64, error)
	Close() error
}

// KeepFinished is how long an approval stays once it can no longer change
// (used, denied, or past its expiry): long enough to answer questions
// about it, short enough that the store does not grow without end. The
// audit log keeps the lasting record.
const KeepFinished = 7 * 24 * time.Hour

// KeepSessions is how long a session stays after its last update (a
// charge, a mode change, a kill, an observation). A pruned session is
// forgotten whole, its kill flag, Flagged and observations too: a later
// write starts it afresh, unkilled, unflagged and with nothing spent. So
// it is kept well past anything that could still act for it: a run's
// checkpoint stays KeepRuns (7 days) and the approval a parked run waits
// on lives DefaultApprovalTTL (15 minutes), so any run that can still
// resume finds its killed session still killed. Past that, keeping it
// only makes the store grow without end. The global kill flag is never
// pruned.
const KeepSessions = 30 * 24 * time.Hour

// Apply charges s with c at now, as a backend does under its lock: ErrKilled
// when s or every session (killAll) is killed, the *BudgetError of Check,
// else the charged session. A refusal returns s unchanged.
func (c Charge) Apply(s Session, killAll bool, now time.Time) (Session, error) {
	if killAll || s.Killed {
		return s, fmt.Errorf("%w (%s)", ErrKilled, map[bool]string{true: "every session is killed", false: "this session is killed"}[killAll])
	}
	if err := c.Check(s); err != nil {
		return s, err
	}
	s.Step += c.Steps
	s.Tokens += c.Tokens
	s.MicroUSD += c.MicroUSD
	s.Updated = now
	return s, nil
}

// ValidObservations refuses a batch that no backend may store: more than
// MaxObserveBatch observations, an empty value or one longer than
// MaxObservationValue, an empty source or one longer than
// MaxObservationSource. Seq is ignored: the store sets it.
func ValidObservations(obs []Observation) error {
	if len(obs) > MaxObserveBatch {
		return fmt.Errorf("%d observations in one batch, past the limit %d (store.MaxObserveBatch); send them in several", len(obs), MaxObserveBatch)
	}
	for i, o := range obs {
		switch {
		case o.Value == "" || len(o.Value) > MaxObservationValue:
			return fmt.Errorf("observation %d: the value must be 1 to %d bytes (store.MaxObservationValue), not %d", i, MaxObservationValue, len(o.Value))
		case o.Source == "" || len(o.Source) > MaxObservationSource:
			return fmt.Errorf("observation %d: the source must be 1 to %d bytes (store.MaxObservationSource), not %d", i, MaxObservationSource, len(o.Source))
		}
	}
	return nil
}

// ValidMode refuses an over-long mode name.
func ValidMode(mode string) error {
	if len(mode) > MaxMode {
		return fmt.Errorf("the mode must be at most %d bytes (store.MaxMode), not %d", MaxMode, len(mode))
	}
	return nil
}
