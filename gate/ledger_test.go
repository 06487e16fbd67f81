package gate_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"airlock.dev/airlock/audit"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/ledger"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/store/sqlite"
	"airlock.dev/airlock/tool"
)

// effectTool counts its runs; while block is set, each run waits on it.
type effectTool struct {
	runs  atomic.Int64
	block chan struct{}
	fail  atomic.Bool
}

func (e *effectTool) tool() tool.Tool {
	return tool.Tool{Name: "charge", Description: "charges a card", Risk: tool.RiskMedium, Effect: tool.EffectExternal,
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"cents":{"type":"integer","minimum":0,"maximum":100000}}}`),
		Run: func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			n := e.runs.Add(1)
			if e.block != nil {
				select {
				case <-e.block:
				case <-ctx.Done():
					return tool.Result{}, ctx.Err()
				}
			}
			if e.fail.Load() {
				return tool.Fail("card_declined", "the card was declined", "Use another card"), nil
			}
			return tool.Result{Content: "charged, receipt " + string(rune('0'+n))}, nil
		}}
}

// stateLedger opens a SQLite store in a temporary directory, closed when
// the test ends, and a ledger on it.
func stateLedger(t *testing.T) (*sqlite.DB, *ledger.Ledger) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	l, err := ledger.New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	return db, l
}

func ledgerGate(t *testing.T, e *effectTool) *gate.Gate {
	t.Helper()
	_, l := stateLedger(t)
	reg := tool.NewRegistry()
	if err := reg.Register(e.tool()); err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Ledger: l, Audit: log,
		Without: gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func charge(g *gate.Gate, session, key, args string) tool.Result {
	return g.Call(context.Background(), tool.Call{Tool: "charge", Args: json.RawMessage(args), Session: session,
		IdempotencyKey: key, Mode: "auto", Role: "admin"})
}

func TestLedgerStage(t *testing.T) {
	e := &effectTool{}
	g := ledgerGate(t, e)

	first := charge(g, "s1", "", `{"cents":500}`)
	again := charge(g, "s1", "", `{"cents":500}`)
	if !first.OK() || !again.OK() || e.runs.Load() != 1 { // an audit failure shows here as internal_error
		t.Fatalf("a repeat in one session: runs %d, results %+v %+v; want 1 run", e.runs.Load(), first, again)
	}
	if first.Replayed || !again.Replayed || again.Content != first.Content {
		t.Fatalf("the repeat must replay the stored result: first %+v, again %+v", first, again)
	}
	// Other arguments, or another session, are another call.
	charge(g, "s1", "", `{"cents":501}`)
	charge(g, "s2", "", `{"cents":500}`)
	if e.runs.Load() != 3 {
		t.Fatalf("runs %d, want 3", e.runs.Load())
	}
	// A caller's key holds across sessions; reused for another call, it is refused.
	charge(g, "s3", "order-17", `{"cents":900}`)
	if r := charge(g, "s4", "order-17", `{"cents":900}`); !r.Replayed || e.runs.Load() != 4 {
		t.Fatalf("the same key from another session: %+v, runs %d; want a replay and 4 runs", r, e.runs.Load())
	}
	if r := charge(g, "s4", "order-17", `{"cents":1}`); r.Error == nil || r.Error.Code != ledger.CodeKeyReused {
		t.Fatalf("a key reused for other arguments: %+v, want idempotency_key_reused", r.Error)
	}
	// A failure may be tried again, and the retry says so.
	e.fail.Store(true)
	if r := charge(g, "s5", "", `{"cents":7}`); r.Error == nil {
		t.Fatal("the declined charge must fail")
	}
	e.fail.Store(false)
	r := charge(g, "s5", "", `{"cents":7}`)
	if !r.OK() || !r.Retry || e.runs.Load() != 6 {
		t.Fatalf("the retry after a failure: %+v, runs %d; want it to run again, flagged as a retry", r, e.runs.Load())
	}
	// A check keys nothing and runs nothing.
	if res := g.Check(context.Background(), tool.Call{Tool: "charge", Args: json.RawMessage(`{"cents":3}`), Mode: "auto", Role: "admin"}); res.Decision != "allow" || e.runs.Load() != 6 {
		t.Fatalf("check: %+v, runs %d", res, e.runs.Load())
	}
}

func TestLedgerStageConcurrentDuplicate(t *testing.T) {
	e := &effectTool{block: make(chan struct{})}
	g := ledgerGate(t, e)
	var wg sync.WaitGroup
	wg.Add(1)
	var first tool.Result
	go func() {
		defer wg.Done()
		first = charge(g, "s", "pay-1", `{"cents":5}`)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for e.runs.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	dup := charge(g, "s", "pay-1", `{"cents":5}`)
	if dup.Error == nil || dup.Error.Code != ledger.CodeInProgress || dup.Error.Hint == "" {
		t.Fatalf("a duplicate while the first runs: %+v, want in_progress with a hint", dup.Error)
	}
	close(e.block)
	wg.Wait()
	if !first.OK() || e.runs.Load() != 1 {
		t.Fatalf("first %+v, runs %d", first, e.runs.Load())
	}
	if r := charge(g, "s", "pay-1", `{"cents":5}`); !r.Replayed || r.Content != first.Content {
		t.Fatalf("after the first finished: %+v, want its stored result", r)
	}
}

// TestLedgerRefusedAfterTheEffect: a result the after stage refuses (over
// MaxResultBytes) still came from an effect that happened; a repeat gets
// the same refusal and does not run it again.
func TestLedgerRefusedAfterTheEffect(t *testing.T) {
	var runs atomic.Int64
	big := tool.Tool{Name: "dump", Description: "writes and prints a lot", Risk: tool.RiskMedium, Effect: tool.EffectWrite,
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{}}`),
		Run: func(context.Context, *tool.Call) (tool.Result, error) {
			runs.Add(1)
			return tool.Result{Content: strings.Repeat("a", gate.MaxResultBytes+1)}, nil
		}}
	_, l := stateLedger(t)
	reg := tool.NewRegistry()
	reg.Register(big)
	g, _ := gate.New(reg, &gate.Options{Policy: policy.Default(), Ledger: l,
		Without: gate.WithoutAudit | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
	for i := range 3 {
		r := g.Call(context.Background(), tool.Call{Tool: "dump", Args: json.RawMessage(`{}`), Session: "s", Mode: "auto"})
		if r.Error == nil || r.Error.Code != tool.CodeFileTooLarge {
			t.Fatalf("call %d: %+v, want file_too_large", i, r.Error)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("the effect ran %d times, want once", runs.Load())
	}
}
