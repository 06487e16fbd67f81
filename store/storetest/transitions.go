package storetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"airlock.dev/airlock/store"
)

// MaxTransitionOps bounds the operations CheckTransitions reads from one
// input, so a fuzz input's cost stays small.
const MaxTransitionOps = 64

// steps are the clock advances an operation may make: none, a little, to
// the lease's edge either side, and past the retention.
var steps = []time.Duration{0, time.Microsecond, time.Second, lease - time.Microsecond, lease, lease + keep}

// CheckTransitions replays ops, three bytes per operation, against s and
// against the rules of package store applied in memory, and fails at the
// first difference: which acquisitions succeed, what each entry holds,
// which renewals and finishes are fenced out. (Pruning is global, so the
// suite's Retention test covers it instead.) It is
// the body of each backend's FuzzLedger, so that a backend that re-states
// the rules (Redis's Lua) is checked against them. Keys begin with ns,
// which must be new for every call on a shared store.
func CheckTransitions(t *testing.T, s store.Ledger, ns string, ops []byte) {
	ctx := context.Background()
	now := t0
	model := map[string]store.LedgerEntry{}
	tokens := map[byte]string{} // actor -> its latest token
	var serial int
	if len(ops) > 3*MaxTransitionOps {
		ops = ops[:3*MaxTransitionOps]
	}
	keys := []string{ns + "a", ns + "b"}
	for i := 0; i+3 <= len(ops); i += 3 {
		op, arg, step := ops[i], ops[i+1], ops[i+2]
		now = now.Add(steps[int(step)%len(steps)])
		key := keys[int(arg>>4)%len(keys)]
		actor := arg & 3
		fp := "fp-" + strconv.Itoa(int(arg>>2)&1)
		what := fmt.Sprintf("op %d (%d %#x %d) on %s at t0+%v", i/3, op, arg, step, key, now.Sub(t0))
		var prev *store.LedgerEntry
		if e, ok := model[key]; ok {
			prev = &e
		}
		switch op % 6 {
		case 0, 1: // acquire
			serial++
			tokens[actor] = fmt.Sprintf("tok-%d-%d", actor, serial)
			a := store.LedgerAcquire{Key: key, Fingerprint: fp, Owner: "owner-" + strconv.Itoa(int(actor)), Token: tokens[actor],
				Now: now, Lease: now.Add(lease), Expires: now.Add(lease + keep)}
			want, wantOK := a.Acquire(prev)
			got, gotOK, err := s.AcquireLedgerKey(ctx, a)
			if err != nil {
				t.Fatalf("%s: AcquireLedgerKey: %v", what, err)
			}
			if gotOK != wantOK {
				t.Fatalf("%s: acquired %v, the rules say %v (entry %+v)", what, gotOK, wantOK, prev)
			}
			checkEntry(t, what, got, want)
			if wantOK {
				model[key] = want
			}
		case 2: // renew
			tok := tokens[actor]
			var want store.LedgerEntry
			wantErr := store.ErrLeaseLost
			if prev != nil {
				want, wantErr = prev.Renew(tok, now, now.Add(lease), now.Add(lease+keep))
			}
			got, err := s.RenewLedgerKey(ctx, key, tok, now, now.Add(lease), now.Add(lease+keep))
			if (err == nil) != (wantErr == nil) || (wantErr != nil && !errors.Is(err, store.ErrLeaseLost)) {
				t.Fatalf("%s: RenewLedgerKey err = %v, the rules say %v", what, err, wantErr)
			}
			if wantErr == nil {
				checkEntry(t, what, got, want)
				model[key] = want
			}
		case 3, 4: // finish: completed, failed for good or retryable
			f := store.LedgerFinish{Key: key, Token: tokens[actor], State: store.LedgerCompleted, Result: []byte{step, 0, 0xff},
				Now: now, Expires: now.Add(keep)}
			if op%6 == 4 {
				f.State, f.Result, f.Error, f.Retryable = store.LedgerFailed, nil, "error "+strconv.Itoa(int(step)), step%2 == 0
			}
			if f.Token == "" {
				f.Token = "never-acquired"
			}
			var want store.LedgerEntry
			wantErr := store.ErrLeaseLost
			if prev != nil {
				want, wantErr = f.Finish(*prev)
			}
			got, err := s.FinishLedgerKey(ctx, f)
			if (err == nil) != (wantErr == nil) || (wantErr != nil && !errors.Is(err, store.ErrLeaseLost)) {
				t.Fatalf("%s: FinishLedgerKey err = %v, the rules say %v", what, err, wantErr)
			}
			if wantErr == nil {
				checkEntry(t, what, got, want)
				model[key] = want
			}
		case 5: // read back
			got, err := s.LedgerEntry(ctx, key)
			if prev == nil {
				if !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("%s: LedgerEntry of a key never written: %+v, %v", what, got, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: LedgerEntry: %v", what, err)
			}
			checkEntry(t, what, got, *prev)
		}
	}
}
