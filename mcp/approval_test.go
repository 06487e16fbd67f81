package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/mcp"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/sqlite"
	"airlock.dev/airlock/tool"
)

// approvals is a fixture whose gate parks asked calls in a real store,
// served with Options.Decide recording answers there.
func approvals(t *testing.T) (*fixture, store.Approvals, *mcp.Options) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "airlock.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := newFixtureWith(t, db)
	opts := &mcp.Options{Mode: "ask", Decide: func(ctx context.Context, _ *sdk.ServerSession, id string, approve bool, by string) error {
		_, err := db.DecideApproval(ctx, id, approve, by, time.Now())
		return err
	}}
	return f, db, opts
}

// latestVersion is the newest protocol version, on which a server may not
// send a request while it serves one: it asks with input requests.
const latestVersion = "2026-07-28"

// TestApprovalQuestion asks the person at the client, on the protocol
// versions before and from 2026-07-28, and takes ground truth from the
// workspace and the store: accepted, the call runs once; declined,
// dismissed or answered no, it ends with approval_denied, the approval is
// recorded as denied and the audit log says so.
func TestApprovalQuestion(t *testing.T) {
	yes := &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	tests := []struct {
		name     string
		answer   *sdk.ElicitResult // nil: the client cannot elicit
		wantCode tool.Code         // "" for the call ran
		status   store.Status
	}{
		{"accepted yes", yes, "", store.StatusUsed},
		{"accepted no", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, tool.CodeApprovalDenied, store.StatusDenied},
		{"declined", &sdk.ElicitResult{Action: "decline"}, tool.CodeApprovalDenied, store.StatusDenied},
		{"cancelled", &sdk.ElicitResult{Action: "cancel"}, tool.CodeApprovalDenied, store.StatusDenied},
		{"no elicitation", nil, tool.CodeApprovalRequired, store.StatusPending},
	}
	for _, version := range []string{legacyVersion, latestVersion} {
		for _, tt := range tests {
			t.Run(version+"/"+tt.name, func(t *testing.T) {
				f, db, opts := approvals(t)
				var asked atomic.Int64
				var message string
				copts := &sdk.ClientOptions{}
				if tt.answer != nil {
					copts.ElicitationHandler = func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
						asked.Add(1)
						message = req.Params.Message
						return tt.answer, nil
					}
				}
				cs := connectVersion(t, f.gate, opts, copts, version)
				if got := cs.InitializeResult().ProtocolVersion; got != version {
					t.Fatalf("negotiated %s, want %s", got, version)
				}
				res := callTool(t, cs, "write_file", map[string]any{"path": "x.txt", "content": "approved\n"})
				id, _ := res.Meta[mcp.MetaCallID].(string)
				data, readErr := os.ReadFile(filepath.Join(f.dir, "x.txt"))
				if tt.answer != nil && (asked.Load() != 1 || !strings.Contains(message, "write_file") || !strings.Contains(message, id)) {
					t.Errorf("asked %d times, message %q; want once, naming write_file and call %s", asked.Load(), message, id)
				}
				if tt.wantCode == "" {
					if res.IsError || string(data) != "approved\n" {
						t.Fatalf("approved call: %s; file %q, %v", text(res), data, readErr)
					}
				} else {
					sc := structured(t, res)
					if !res.IsError || sc["code"] != string(tt.wantCode) || readErr == nil {
						t.Fatalf("result %s %v (file: %v), want %s and no file", text(res), sc, readErr, tt.wantCode)
					}
				}
				entries := f.audited(t, id)
				if len(entries) == 0 {
					t.Fatalf("no audit entries for call %s", id)
				}
				last := entries[len(entries)-1]
				if string(tt.wantCode) != last.Code {
					t.Errorf("audit of call %s ends with code %q, want %q", id, last.Code, tt.wantCode)
				}
				pending, err := db.PendingApprovals(context.Background(), time.Now())
				if err != nil {
					t.Fatal(err)
				}
				if tt.status == store.StatusPending {
					if len(pending) != 1 || !strings.Contains(text(res), pending[0].ID) || !strings.Contains(text(res), "airlock approve "+pending[0].ID) {
						t.Errorf("pending %+v; result %q, want it named with airlock approve", pending, text(res))
					}
					return
				}
				if len(pending) != 0 {
					t.Errorf("%d approvals still pending, want none", len(pending))
				}
				sc := structured(t, res)
				approvalID, _ := sc["approval_id"].(string)
				if tt.status == store.StatusDenied {
					a, err := db.Approval(context.Background(), approvalID, time.Now())
					if err != nil || a.Status != store.StatusDenied {
						t.Errorf("approval %q: %+v, %v; want denied", approvalID, a, err)
					}
					if strings.Contains(text(res), "pending") || strings.Contains(text(res), "airlock approve") {
						t.Errorf("a denied call reads as pending: %s", text(res))
					}
				}
			})
		}
	}
}

// TestApprovalAnswerFailsPending: when the client cannot answer the
// question (its handler fails), the call stays pending, as a tool result.
func TestApprovalAnswerFailsPending(t *testing.T) {
	f, db, opts := approvals(t)
	copts := &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		return nil, errors.New("no person here")
	}}
	cs := connectVersion(t, f.gate, opts, copts, legacyVersion)
	res := callTool(t, cs, "write_file", map[string]any{"path": "x.txt", "content": "x"})
	pending, _ := db.PendingApprovals(context.Background(), time.Now())
	if sc := structured(t, res); sc["code"] != string(tool.CodeApprovalRequired) || len(pending) != 1 || sc["approval_id"] != pending[0].ID {
		t.Errorf("result %v, pending %+v; want approval_required naming the pending approval", sc, pending)
	}
}

// TestRequestStateIsBound: a client on 2026-07-28 sends the state back
// itself; an edited state, or the state of one call sent with another
// call's arguments, is refused and runs nothing.
func TestRequestStateIsBound(t *testing.T) {
	f, db, opts := approvals(t)
	cs := connectVersion(t, f.gate, opts, &sdk.ClientOptions{
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		// Declared, so that the server asks; the test answers by hand.
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return nil, errors.New("not used")
		},
	}, latestVersion)
	ctx := context.Background()
	argsA := map[string]any{"path": "a.txt", "content": "a"}
	argsB := map[string]any{"path": "b.txt", "content": "b"}
	ask := func(args map[string]any) *sdk.CallToolResult {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "write_file", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if !res.NeedsInput() || res.RequestState == "" || res.InputRequests == nil {
			t.Fatalf("%v: %s, want an approval question", args, text(res))
		}
		return res
	}
	yes := sdk.InputResponseMap{}
	qa, qb := ask(argsA), ask(argsB)
	for id := range qa.InputRequests {
		yes[id] = &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	}
	answer := func(args map[string]any, state string) *sdk.CallToolResult {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "write_file", Arguments: args, InputResponses: yes, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	edited := []byte(qa.RequestState)
	edited[len(edited)/3] ^= 1
	for name, res := range map[string]*sdk.CallToolResult{
		"edited":               answer(argsA, string(edited)),
		"A's state, B's call":  answer(argsB, qa.RequestState),
		"B's state, A's call":  answer(argsA, qb.RequestState),
		"no state":             answer(argsA, ""),
		"another server's key": answer(argsA, qa.RequestState[:strings.IndexByte(qa.RequestState, '.')+1]+strings.Repeat("0", 64)),
	} {
		if sc := structured(t, res); sc["code"] != string(tool.CodeInvalidCall) {
			t.Errorf("%s: %s, want invalid_call", name, text(res))
		}
	}
	for _, name := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(f.dir, name)); err == nil {
			t.Fatalf("%s was written by a forged answer", name)
		}
	}
	if pending, _ := db.PendingApprovals(ctx, time.Now()); len(pending) != 2 {
		t.Errorf("%d approvals pending, want both still pending", len(pending))
	}
	// Without an answer nothing is decided: A stays pending, and is named.
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "write_file", Arguments: argsA, InputResponses: sdk.InputResponseMap{}, RequestState: qa.RequestState})
	if err != nil {
		t.Fatal(err)
	}
	if sc := structured(t, res); sc["code"] != string(tool.CodeApprovalRequired) || !strings.Contains(text(res), "airlock approve") {
		t.Errorf("no answer: %s, want approval_required, still pending", text(res))
	}
	// The true answer, with the arguments in another key order, runs A once.
	res = answer(map[string]any{"content": "a", "path": "a.txt"}, qa.RequestState)
	if data, err := os.ReadFile(filepath.Join(f.dir, "a.txt")); res.IsError || string(data) != "a" {
		t.Fatalf("the approved call: %s; file %q, %v", text(res), data, err)
	}
	// Sent again, the same answer runs nothing more.
	os.Remove(filepath.Join(f.dir, "a.txt"))
	if res := answer(argsA, qa.RequestState); !res.IsError {
		t.Errorf("a replayed answer ran the call again: %s", text(res))
	}
	if _, err := os.Stat(filepath.Join(f.dir, "a.txt")); err == nil {
		t.Error("a replayed answer wrote the file again")
	}
}

func TestElicitationCutsLongArguments(t *testing.T) {
	f, _, opts := approvals(t)
	var message string
	copts := &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		message = req.Params.Message
		return &sdk.ElicitResult{Action: "decline"}, nil
	}}
	cs := connectVersion(t, f.gate, opts, copts, legacyVersion)
	callTool(t, cs, "write_file", map[string]any{"path": "x.txt", "content": strings.Repeat("é", mcp.MaxElicitArgBytes)})
	if len(message) > mcp.MaxElicitArgBytes+512 || !strings.Contains(message, "MaxElicitArgBytes") {
		t.Errorf("message of %d bytes, want it cut at MaxElicitArgBytes and saying so", len(message))
	}
	if !strings.Contains(message, "Call id:") {
		t.Errorf("message %q lacks the call id", message)
	}
}

func TestDecideNotCalledForOtherRefusals(t *testing.T) {
	f, _, opts := approvals(t)
	var asked atomic.Int64
	opts.Mode = "read-only"
	opts.Decide = func(context.Context, *sdk.ServerSession, string, bool, string) error {
		asked.Add(1)
		return nil
	}
	cs := connect(t, f.gate, opts, &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked.Add(1)
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}})
	callTool(t, cs, "write_file", map[string]any{"path": "x.txt", "content": "x"})
	callTool(t, cs, "calculate", map[string]any{"expression": "1+1"})
	if asked.Load() != 0 {
		t.Errorf("asked %d times for a deny and a success, want 0", asked.Load())
	}
}

// TestApprovalOverTransports: the same client gets the same approval
// question over stdio and over Streamable HTTP, on every protocol version
// the door offers: accepted, the call runs once; declined,
// approval_denied.
func TestApprovalOverTransports(t *testing.T) {
	dial := map[string]func(t *testing.T, f *fixture, opts *mcp.Options) sdk.Transport{
		"stdio": func(t *testing.T, f *fixture, opts *mcp.Options) sdk.Transport {
			cr, sw := io.Pipe()
			sr, cw := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- mcp.ServeStdio(ctx, f.gate, sr, sw, opts)
				sw.Close()
			}()
			t.Cleanup(func() {
				cw.Close()
				cancel()
				<-done
			})
			return &sdk.IOTransport{Reader: cr, Writer: cw}
		},
		"http": func(t *testing.T, f *fixture, opts *mcp.Options) sdk.Transport {
			srv := newHTTP(t, f, opts, nil)
			return &sdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1}
		},
	}
	for _, transport := range []string{"stdio", "http"} {
		for _, version := range []string{legacyVersion, latestVersion} {
			for _, accept := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/accept=%v", transport, version, accept), func(t *testing.T) {
					f, _, opts := approvals(t)
					var asked atomic.Int64
					client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
						ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
							asked.Add(1)
							if !accept {
								return &sdk.ElicitResult{Action: "decline"}, nil
							}
							return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
						}})
					cs, err := client.Connect(context.Background(), dial[transport](t, f, opts), &sdk.ClientSessionOptions{ProtocolVersion: version})
					if err != nil {
						t.Fatal(err)
					}
					defer cs.Close()
					// The stateful HTTP door offers versions up to 2025-11-25
					// (the SDK serves 2026-07-28 over stateless HTTP only): a
					// client asking for the newest falls back to it.
					want := version
					if transport == "http" {
						want = legacyVersion
					}
					if got := cs.InitializeResult().ProtocolVersion; got != want {
						t.Fatalf("negotiated %s, want %s", got, want)
					}
					res := callTool(t, cs, "write_file", map[string]any{"path": "x.txt", "content": "x"})
					data, readErr := os.ReadFile(filepath.Join(f.dir, "x.txt"))
					if asked.Load() != 1 {
						t.Errorf("asked %d times, want once", asked.Load())
					}
					if accept {
						if res.IsError || string(data) != "x" {
							t.Errorf("accepted: %s; file %q, %v", text(res), data, readErr)
						}
						return
					}
					if sc := structured(t, res); sc["code"] != string(tool.CodeApprovalDenied) || readErr == nil {
						t.Errorf("declined: %s (file: %v), want approval_denied and no file", text(res), readErr)
					}
				})
			}
		}
	}
}
