package mcp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/audit"
	"airlock.dev/airlock/calc"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/tools"
	"airlock.dev/airlock/workspace"
)

// benchGate is the gate as airlock runs it: built-in policy, a workspace,
// the audit log in group commit.
func benchGate(b *testing.B) *gate.Gate {
	dir := b.TempDir()
	ws, err := workspace.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	log, err := audit.Open(filepath.Join(dir, workspace.StateDir, "audit.jsonl"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { log.Close() })
	reg := tool.NewRegistry()
	reg.Register(tools.Calculate())
	g, err := gate.New(reg, &gate.Options{Policy: policy.Default(), Workspace: ws, Audit: log,
		Without: gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// bareServer serves the same calculate tool with a handler that calls calc
// directly: the MCP server and transport without the gate.
func bareServer(g *gate.Gate) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "bare", Version: "dev"}, &sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{}})
	for _, t := range g.Tools() {
		srv.AddTool(&sdk.Tool{Name: t.Name, Description: t.Description, InputSchema: t.Schema},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				var args struct {
					Expression string `json:"expression"`
				}
				json.Unmarshal(req.Params.Arguments, &args)
				v, err := calc.Eval(args.Expression, nil)
				if err != nil {
					return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: v.String()}}}, nil
			})
	}
	return srv
}

// stdioClient serves srv over airlock's stdio transport on pipes and
// connects the SDK's client to it.
func stdioClient(b *testing.B, srv *sdk.Server) *sdk.ClientSession {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	go srv.Run(ctx, &stdioTransport{in: sr, out: sw, maxBytes: DefaultMaxMessageBytes, log: slog.New(slog.DiscardHandler)})
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(ctx, &sdk.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// httpClient serves h and connects the SDK's Streamable HTTP client.
func httpClient(b *testing.B, h http.Handler) *sdk.ClientSession {
	ts := httptest.NewServer(h)
	b.Cleanup(ts.Close)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// bareHTTP is the bare server behind the same guard as NewHTTPHandler.
func bareHTTP(srv *sdk.Server) http.Handler {
	ho := (&HTTPOptions{}).withDefaults()
	hosts, _ := parseHosts(ho.AllowedHosts)
	origins, _ := parseOrigins(ho.AllowedOrigins)
	inner := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{MaxRequestBodyBytes: ho.MaxBodyBytes, DisableLocalhostProtection: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", &guard{hosts: hosts, origins: origins, maxBody: ho.MaxBodyBytes, next: inner})
	return mux
}

// BenchmarkToolsCall measures the tools/call round trip of calculate, from
// the SDK's client to the server and back, through the gate and through a
// bare handler on the same server stack, alternating call by call so both
// see the same machine. It reports p50 and p99 of each and the gate's
// share: (gate - bare) / bare at p50. Run with -benchtime Nx.
func BenchmarkToolsCall(b *testing.B) {
	g := benchGate(b)
	for _, door := range []string{"stdio", "http"} {
		b.Run(door, func(b *testing.B) {
			var withGate, bare *sdk.ClientSession
			if door == "stdio" {
				withGate = stdioClient(b, NewServer(g, nil))
				bare = stdioClient(b, bareServer(g))
			} else {
				h, err := NewHTTPHandler(g, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				withGate = httpClient(b, h)
				bare = httpClient(b, bareHTTP(bareServer(g)))
			}
			params := &sdk.CallToolParams{Name: "calculate", Arguments: map[string]any{"expression": "($100 + $250.75) * 20%"}}
			call := func(cs *sdk.ClientSession) time.Duration {
				start := time.Now()
				res, err := cs.CallTool(context.Background(), params)
				if err != nil || res.IsError {
					b.Fatalf("call: %v %+v", err, res)
				}
				return time.Since(start)
			}
			for range 200 { // warm up both
				call(withGate)
				call(bare)
			}
			var tg, tb []time.Duration
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					tg = append(tg, call(withGate))
					tb = append(tb, call(bare))
				} else {
					tb = append(tb, call(bare))
					tg = append(tg, call(withGate))
				}
			}
			b.StopTimer()
			p := func(d []time.Duration, q float64) float64 {
				slices.Sort(d)
				return float64(d[int(q*float64(len(d)-1))].Microseconds())
			}
			gp50, gp99, bp50, bp99 := p(tg, 0.50), p(tg, 0.99), p(tb, 0.50), p(tb, 0.99)
			b.ReportMetric(gp50, "gate-p50-µs")
			b.ReportMetric(gp99, "gate-p99-µs")
			b.ReportMetric(bp50, "bare-p50-µs")
			b.ReportMetric(bp99, "bare-p99-µs")
			b.ReportMetric(100*(gp50-bp50)/bp50, "gate-added-p50-%")
			b.ReportMetric(100*(gp99-bp99)/bp99, "gate-added-p99-%")
		})
	}
}
