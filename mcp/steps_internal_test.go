package mcp

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/store/sqlite"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/tools"
)

// A session's step counter goes when the session ends: the map holds only
// live sessions, however many come and go.
func TestStepCountersEndWithTheirSession(t *testing.T) {
	reg := tool.NewRegistry()
	reg.Register(tools.Calculate())
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(),
		Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{gate: g, opts: (*Options)(nil).withDefaults()}
	srv := sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	for _, tl := range g.Tools() {
		s.addTool(srv, tl)
	}
	ctx := context.Background()
	count := func() int {
		n := 0
		s.steps.Range(func(any, any) bool { n++; return true })
		return n
	}
	for range 5 {
		ct, st := sdk.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "calculate", Arguments: map[string]any{"expression": "1+1"}}); err != nil {
			t.Fatal(err)
		}
		if count() != 1 {
			t.Fatalf("%d step counters while one session is live", count())
		}
		cs.Close()
		ss.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for count() != 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := count(); n != 0 {
			t.Fatalf("%d step counters left after the session ended", n)
		}
	}
}

// With Options.Sessions, a session's steps are counted in the store: two
// servers sharing one store (two replicas) give one session's calls
// consecutive steps, whichever serves each; a killed session's call gets
// no step and the gate's killed error value; a failing store refuses the
// call with internal_error.
func TestStepsInTheStore(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	opts := &Options{Sessions: db}
	a := &server{opts: opts.withDefaults()}
	b := &server{opts: opts.withDefaults()}
	ctx := context.Background()
	for i, s := range []*server{a, b, b, a, b} {
		got, refused := s.nextStep(ctx, nil, "session-1")
		if want := int64(i + 1); got != want || refused != nil {
			t.Fatalf("call %d: step %d (%v), want %d", i+1, got, refused, want)
		}
	}
	if got, _ := a.nextStep(ctx, nil, "session-2"); got != 1 {
		t.Errorf("another session's first step is %d, want 1", got)
	}
	if st, err := db.Session(ctx, "session-1"); err != nil || st.Step != 5 {
		t.Errorf("the store holds %+v (%v), want step 5", st, err)
	}

	now := time.Now()
	if _, err := db.KillSession(ctx, "session-1", true, now); err != nil {
		t.Fatal(err)
	}
	_, refused := b.nextStep(ctx, nil, "session-1")
	if want := gate.KilledError(false); !reflect.DeepEqual(refused, want) {
		t.Errorf("killed session: %+v, want %+v", refused, want)
	}
	if err := db.SetKillAll(ctx, true); err != nil {
		t.Fatal(err)
	}
	_, refused = a.nextStep(ctx, nil, "session-2")
	if want := gate.KilledError(true); !reflect.DeepEqual(refused, want) {
		t.Errorf("every session killed: %+v, want %+v", refused, want)
	}
	if st, _ := db.Session(ctx, "session-2"); st.Step != 1 {
		t.Errorf("a refused call was charged: step %d, want 1", st.Step)
	}

	db.Close()
	if _, refused = a.nextStep(ctx, nil, "session-3"); refused == nil || refused.Code != tool.CodeInternal {
		t.Errorf("closed store: %+v, want internal_error", refused)
	}
}
