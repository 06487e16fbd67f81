package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// RunState is where an agent run stands, as its checkpoint records it.
type RunState string

const (
	RunRunning         RunState = "running"          // a process is driving it
	RunWaitingApproval RunState = "waiting_approval" // parked on Run.Approval until a person decides
	RunEnded           RunState = "ended"            // over, whatever the reason; kept for questions
)

// Run is the checkpoint of one agent run: enough for another process to
// resume it after this one ended or died. The store does not read
// Checkpoint; it is the agent's own (package agent), kept as given.
type Run struct {
	Session string   `json:"session"`
	State   RunState `json:"state"`
	// Approval is the approval a waiting run is parked on.
	Approval   string          `json:"approval,omitempty"`
	Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
	Updated    time.Time       `json:"updated"`
}

// MaxCheckpoint bounds the bytes of Run.Checkpoint in every backend: an
// agent trims its context to a token budget well under it.
const MaxCheckpoint = 8 << 20

// KeepRuns is how long a run's checkpoint stays after its last update.
// An approval a run waits on expires long before (DefaultApprovalTTL), so a
// checkpoint this old can only answer questions, not resume.
const KeepRuns = KeepFinished

// Runs holds agent run checkpoints, one per session. Every method is
// atomic, also across processes sharing the backing store.
type Runs interface {
	// SaveRun writes r, replacing the session's earlier checkpoint
	// whole: of concurrent saves one wins, never a mix of them. It
	// refuses, writing nothing, a run that fails Validate, and an Updated
	// that is zero or outside the instants the backend keeps. The
	// checkpoint comes back byte for byte as given; an empty one comes
	// back nil.
	SaveRun(ctx context.Context, r Run) error
	// Run reads the session's checkpoint. ErrNotFound when there is none.
	Run(ctx context.Context, session string) (Run, error)
}

// Validate refuses a run no backend may store: a bad session id, an
// unknown state, a waiting run with no approval, or a checkpoint over
// MaxCheckpoint or not JSON.
func (r Run) Validate() error {
	if err := ValidSessionID(r.Session); err != nil {
		return err
	}
	switch r.State {
	case RunRunning, RunEnded:
	case RunWaitingApproval:
		if r.Approval == "" {
			return fmt.Errorf("a run waiting for approval must name the approval")
		}
	default:
		return fmt.Errorf("unknown run state %q", r.State)
	}
	if len(r.Approval) > MaxSessionID {
		return fmt.Errorf("the approval id must be at most %d bytes, not %d", MaxSessionID, len(r.Approval))
	}
	if len(r.Checkpoint) > MaxCheckpoint {
		return fmt.Errorf("the checkpoint is %d bytes, over the limit of %d (store.MaxCheckpoint)", len(r.Checkpoint), MaxCheckpoint)
	}
	if len(r.Checkpoint) > 0 && !json.Valid(r.Checkpoint) {
		return fmt.Errorf("the checkpoint is not JSON")
	}
	return nil
}
