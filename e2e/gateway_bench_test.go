package e2e_test

// The gateway's speed and its steadiness under load, against real
// processes: airlock gateway built from this tree, the reference
// "everything" server and mcp-proxy from e2e/node_modules
// (gateway/gatewaytest starts them). They live here, beside the other
// tests that build and run airlock as a process, rather than in package
// gateway: the gateway is measured as a client meets it, the CLI's MCP
// door and the gate included.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"

	"airlock.dev/airlock/audit"
	"airlock.dev/airlock/gateway"
	"airlock.dev/airlock/gateway/gatewaytest"
	"airlock.dev/airlock/runtime"
)

// What the gateway's benchmark and load test call.
const (
	// everythingServer is the upstream's name in the upstreams file, and
	// gatewayEcho the name the gateway offers its echo tool by.
	everythingServer = "everything"
	gatewayEcho      = everythingServer + gateway.DefaultSeparator + "echo"
	// echoMessage is echo's argument; the answer must hold it.
	echoMessage = "through the gate"
	// echoCallTimeout bounds one call; an echo takes about a
	// millisecond.
	echoCallTimeout = 10 * time.Second
)

// The benchmark's bounds: -benchtime Nx runs N rounds of one call to
// each target, after benchWarmup calls each.
const benchWarmup = 100

// The load test: loadClients Streamable HTTP clients call echo in a loop
// through airlock gateway --http for loadDuration, with no error, while
// the gateway's resident memory is sampled every rssInterval. Memory is
// flat when the highest sample of the last rssWindow is at most
// rssGrowth percent above the highest of the first rssWindow after rssWarmup
// (the heap, the audit log's buffers and the HTTP sessions grow to their
// working size in the first seconds). At loadDuration = 60 s: warm-up
// 0–10 s, first window 10–30 s, last window 40–60 s.
const (
	loadDuration = 60 * time.Second
	loadClients  = 16
	rssInterval  = time.Second
	rssWarmup    = loadDuration / 6
	rssWindow    = loadDuration / 3
	rssGrowth    = 10 // percent
)

// target is one way of reaching server-everything's echo tool.
type target struct {
	name string
	cs   *sdk.ClientSession
	tool string
	took []time.Duration
}

// echo calls tool with echoMessage and checks its answer.
func echo(ctx context.Context, cs *sdk.ClientSession, tool string) error {
	ctx, cancel := context.WithTimeout(ctx, echoCallTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"message": echoMessage}})
	if err != nil {
		return err
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError || !strings.Contains(text.String(), "Echo: "+echoMessage) {
		return fmt.Errorf("%s answered isError=%v %q", tool, res.IsError, text.String())
	}
	return nil
}

// everythingUpstreams writes an upstreams file that names
// server-everything over stdio, as gatewaytest runs it, and returns its
// path.
func everythingUpstreams(t testing.TB) string {
	t.Helper()
	ev := gatewaytest.Everything(t)
	cfg := gateway.Config{Version: 1, Servers: map[string]*gateway.Server{
		everythingServer: {Command: ev.Path, Args: ev.Args[1:]},
	}}
	data, err := yaml.Marshal(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// benchGatewayArgsEnv names an environment variable of extra flags for
// the benchmark's airlock gateway, separated by spaces, for finding where
// the time goes: --store sqlite:/dev/shm/state.db, for instance, shows
// what the store's disk costs a call.
const benchGatewayArgsEnv = "AIRLOCK_BENCH_GATEWAY_ARGS"

// gatewayArgs are the flags of airlock gateway in front of upstreams on
// workspace ws, in mode auto (echo, a read, runs without asking).
func gatewayArgs(upstreams, ws string) []string {
	return []string{"--upstreams", upstreams, "--workspace", ws, "--mode", "auto"}
}

// BenchmarkGatewayEcho times one echo round trip over stdio three ways,
// side by side (each round calls each target once, in an order that
// rotates from round to round): the Go SDK's client straight to
// server-everything, the same client to airlock gateway in front of it,
// and the client over Streamable HTTP to mcp-proxy in front of it. It
// reports each one's p50, p90 and p99 in µs, the gateway's ratios to the
// other two, and the gate's own cost in the gateway: per call, the sum
// of the stages in its audit record other than execute (the upstream's
// round trip, reported apart), p50 over the timed calls. Each stage is
// recorded in whole microseconds, rounded down, so the sum may fall short
// by up to one microsecond a stage; and the audit append itself, after
// the last stage, is in none of them.
//
//	go test ./e2e -run '^$' -bench GatewayEcho -benchtime 3000x
func BenchmarkGatewayEcho(b *testing.B) {
	e2eDir, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	bin := buildAirlock(b, e2eDir)
	ws := workspace(b, "gateway")
	args := slices.Concat([]string{"gateway"}, gatewayArgs(everythingUpstreams(b), ws), strings.Fields(os.Getenv(benchGatewayArgsEnv)))
	if extra := os.Getenv(benchGatewayArgsEnv); extra != "" {
		b.Logf("%s: airlock %s", benchGatewayArgsEnv, strings.Join(args, " "))
	}
	gw := exec.Command(bin, args...)
	gw.Env, gw.Dir = doorEnv(b), b.TempDir()
	var gwLog gatewaytest.Buffer
	gw.Stderr = &gwLog
	b.Cleanup(func() {
		if b.Failed() {
			b.Logf("airlock gateway's log:\n%s", gwLog.String())
		}
	})
	targets := []*target{
		{name: "direct", cs: commandClient(b, gatewaytest.Everything(b)), tool: "echo"},
		{name: "gateway", cs: commandClient(b, gw), tool: gatewayEcho},
		{name: "mcp-proxy", cs: httpClient(b, gatewaytest.StartMCPProxy(b, gatewaytest.Everything(b))), tool: "echo"},
	}
	ctx := context.Background()
	for range benchWarmup {
		for _, tg := range targets {
			if err := echo(ctx, tg.cs, tg.tool); err != nil {
				b.Fatalf("%s: %v", tg.name, err)
			}
		}
	}
	// Every gateway call's record is in the file when its answer leaves
	// (audit appends before the gate returns), so the warm-up's are all
	// there now.
	warm := len(gateRecords(b, ws))

	round := 0
	for b.Loop() {
		for i := range targets {
			tg := targets[(round+i)%len(targets)]
			start := time.Now()
			if err := echo(ctx, tg.cs, tg.tool); err != nil {
				b.Fatalf("%s: %v", tg.name, err)
			}
			tg.took = append(tg.took, time.Since(start))
		}
		round++
	}
	b.StopTimer()

	p := map[string][3]float64{}
	for _, tg := range targets {
		q := percentiles(tg.took, 0.50, 0.90, 0.99)
		p[tg.name] = [3]float64{q[0], q[1], q[2]}
		b.ReportMetric(q[0], tg.name+"-p50-µs")
		b.ReportMetric(q[1], tg.name+"-p90-µs")
		b.ReportMetric(q[2], tg.name+"-p99-µs")
	}
	b.ReportMetric(p["gateway"][0]/p["direct"][0], "gateway/direct-p50-x")
	b.ReportMetric(p["gateway"][0]/p["mcp-proxy"][0], "gateway/mcp-proxy-p50-x")
	b.ReportMetric(p["gateway"][2]/p["direct"][2], "gateway/direct-p99-x")
	b.ReportMetric(p["gateway"][2]/p["mcp-proxy"][2], "gateway/mcp-proxy-p99-x")

	records := gateRecords(b, ws)[warm:]
	if len(records) != round {
		b.Fatalf("the gateway's audit log has %d echo records for the %d timed calls", len(records), round)
	}
	own, stages := gateCost(b, records)
	b.ReportMetric(percentiles(own, 0.50)[0], "gate-own-p50-µs")
	b.ReportMetric(percentiles(stages["execute"], 0.50)[0], "gate-execute-p50-µs")
	// Each stage in the gate's order (the first record's), on one line:
	// go test shows only the first lines of a benchmark's log.
	var p50s, p99s []string
	for _, s := range records[0].Stages {
		q := percentiles(stages[s.Name], 0.50, 0.99)
		p50s = append(p50s, fmt.Sprintf("%s %.0f", s.Name, q[0]))
		p99s = append(p99s, fmt.Sprintf("%s %.0f", s.Name, q[1]))
	}
	b.Logf("the gate's stages in the gateway over %d calls, p50 µs: %s", len(records), strings.Join(p50s, ", "))
	b.Logf("p99 µs: %s", strings.Join(p99s, ", "))
}

// percentiles are the qs (0–1) of took, nearest rank, in µs.
func percentiles(took []time.Duration, qs ...float64) []float64 {
	sorted := slices.Clone(took)
	slices.Sort(sorted)
	out := make([]float64, len(qs))
	for i, q := range qs {
		if len(sorted) > 0 {
			out[i] = float64(sorted[int(q*float64(len(sorted)-1)+0.5)].Nanoseconds()) / 1e3
		}
	}
	return out
}

// gateRecords are the records of the gateway's echo calls in ws's audit
// log, in order; it fails the test on any call the gate did not allow.
func gateRecords(t testing.TB, ws string) []audit.Entry {
	t.Helper()
	f, err := os.Open(runtime.AuditPath(ws))
	if err != nil {
		t.Fatalf("the gateway's audit log: %v", err)
	}
	defer f.Close()
	var entries []audit.Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec audit.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("the gateway's audit log, record %d: %v", len(entries)+1, err)
		}
		if rec.Entry.Tool != gatewayEcho {
			continue
		}
		if rec.Entry.Decision != "allow" || rec.Entry.Code != "" {
			t.Fatalf("the gateway's audit log, seq %d: %s decided %s (%s), want allow", rec.Seq, gatewayEcho, rec.Entry.Decision, rec.Entry.Code)
		}
		entries = append(entries, rec.Entry)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return entries
}

// gateCost is, per record, the sum of the stages that are the gate's own
// (every stage but execute, which is the upstream's round trip), and
// each stage's times by name.
func gateCost(t testing.TB, records []audit.Entry) (own []time.Duration, stages map[string][]time.Duration) {
	t.Helper()
	stages = map[string][]time.Duration{}
	for _, e := range records {
		var sum time.Duration
		executed := false
		for _, s := range e.Stages {
			d := time.Duration(s.Micros) * time.Microsecond
			stages[s.Name] = append(stages[s.Name], d)
			if s.Name == "execute" {
				executed = true
				continue
			}
			sum += d
		}
		if !executed {
			t.Fatalf("an echo record has no execute stage: %+v", e.Stages)
		}
		own = append(own, sum)
	}
	return own, stages
}

// TestGatewayLoad runs loadClients Streamable HTTP clients (the Go SDK's,
// each with its own connections) calling echo through airlock gateway
// --http for loadDuration. It fails on any error, on a call the audit
// log does not hold, and on the gateway's memory growing past rssGrowth
// (see the constants); it logs the throughput, the latency and the
// memory samples (go test -v).
func TestGatewayLoad(t *testing.T) {
	e2eDir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	noteInputs(t, filepath.Dir(e2eDir))
	bin := buildAirlock(t, e2eDir)
	ws := workspace(t, "gateway")
	url, pid := startHTTP(t, bin, doorEnv(t), "gateway", append([]string{"--http"}, gatewayArgs(everythingUpstreams(t), ws)...)...)

	clients := make([]*sdk.ClientSession, loadClients)
	for i := range clients {
		// Each client its own connections, as separate programs would
		// have: http.DefaultTransport keeps only two idle connections
		// a host, and sixteen clients sharing it would open and close
		// connections all along.
		tr := &http.Transport{MaxIdleConnsPerHost: 4}
		t.Cleanup(tr.CloseIdleConnections)
		clients[i] = httpClientWith(t, url, &http.Client{Transport: tr})
	}

	var (
		calls, failed atomic.Int64
		firstErr      error
		errOnce       sync.Once
		took          = make([][]time.Duration, loadClients)
		samples       []rssSample
		wg            sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(loadDuration)
	for i, cs := range clients {
		wg.Go(func() {
			// A call starts only before the end, and none is cut short
			// by it: an error here is the gateway's.
			for time.Now().Before(end) {
				t0 := time.Now()
				if err := echo(t.Context(), cs, gatewayEcho); err != nil {
					failed.Add(1)
					errOnce.Do(func() { firstErr = fmt.Errorf("client %d: %w", i, err) })
					continue
				}
				took[i] = append(took[i], time.Since(t0))
				calls.Add(1)
			}
		})
	}
	sampler := time.NewTicker(rssInterval)
	for time.Now().Before(end) {
		<-sampler.C
		kb, err := rssKB(pid)
		if err != nil {
			t.Errorf("sampling the gateway's memory: %v", err)
			break
		}
		samples = append(samples, rssSample{at: time.Since(start), kb: kb})
	}
	sampler.Stop()
	wg.Wait()
	elapsed := time.Since(start)

	n := calls.Load()
	all := slices.Concat(took...)
	q := percentiles(all, 0.50, 0.99)
	t.Logf("%d clients, %v: %d calls, %.0f calls/s, %d errors; latency p50 %.0f µs, p99 %.0f µs",
		loadClients, elapsed.Round(time.Millisecond), n, float64(n)/elapsed.Seconds(), failed.Load(), q[0], q[1])
	if f := failed.Load(); f > 0 {
		t.Errorf("%d of %d calls failed; the first: %v", f, n+f, firstErr)
	}
	if n == 0 {
		t.Fatal("no call succeeded")
	}

	var lines []string
	for _, s := range samples {
		lines = append(lines, fmt.Sprintf("%.0fs %d", s.at.Seconds(), s.kb/1024))
	}
	t.Logf("the gateway's RSS (MiB) every %v: %s", rssInterval, strings.Join(lines, ", "))
	verdict, err := rssFlat(samples)
	if err != nil {
		t.Error(err)
	} else {
		t.Log(verdict)
	}

	// Every call went through the gate: one allowed record each, the
	// load's and the connections' none besides.
	if got := int64(len(gateRecords(t, ws))); got != n {
		t.Errorf("the audit log holds %d echo records for %d calls", got, n)
	}
}

// rssSample is the gateway's resident memory at a time into the load.
type rssSample struct {
	at time.Duration
	kb int64
}

// rssFlat judges the samples: an error when the highest RSS of the last
// rssWindow is more than rssGrowth percent above the highest of the first
// rssWindow after rssWarmup, or when either window has no sample;
// otherwise the verdict, for the log.
func rssFlat(samples []rssSample) (string, error) {
	var first, last int64
	for _, s := range samples {
		if s.at >= rssWarmup && s.at < rssWarmup+rssWindow {
			first = max(first, s.kb)
		}
		if s.at > loadDuration-rssWindow {
			last = max(last, s.kb)
		}
	}
	if first == 0 || last == 0 {
		return "", fmt.Errorf("too few memory samples (%d) to judge the windows", len(samples))
	}
	growth := 100 * (float64(last)/float64(first) - 1)
	if last*100 > first*(100+rssGrowth) {
		return "", fmt.Errorf("the gateway's memory grew: the last %v's highest RSS is %d KiB, %.1f%% above the %d KiB of the first %v after the warm-up (bound %d%%)",
			rssWindow, last, growth, first, rssWindow, rssGrowth)
	}
	return fmt.Sprintf("flat: the last %v's highest RSS %d KiB is %+.1f%% from the first %v's %d KiB after the warm-up (bound +%d%%)",
		rssWindow, last, growth, rssWindow, first, rssGrowth), nil
}

// rssKB is VmRSS of process pid, in KiB, from /proc/PID/status.
func rssKB(pid int) (int64, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, errors.New("no VmRSS line in /proc/PID/status: has the process exited?")
}

// TestRSSFlat checks the load test's judgement of memory on made-up
// samples, one a second over loadDuration.
func TestRSSFlat(t *testing.T) {
	series := func(kb func(at time.Duration) int64) []rssSample {
		var out []rssSample
		for at := rssInterval; at <= loadDuration; at += rssInterval {
			out = append(out, rssSample{at: at, kb: kb(at)})
		}
		return out
	}
	const base = 100 << 10
	for _, tc := range []struct {
		name    string
		samples []rssSample
		flat    bool
	}{
		{"steady", series(func(time.Duration) int64 { return base }), true},
		{"warm-up growth only", series(func(at time.Duration) int64 { return base * min(int64(at), int64(rssWarmup)) / int64(rssWarmup) }), true},
		{"noise within the bound", series(func(at time.Duration) int64 { return base + int64(at/time.Second%3)*(base/50) }), true},
		{"at the bound", series(func(at time.Duration) int64 {
			if at > loadDuration-rssWindow {
				return base + base/10
			}
			return base
		}), true},
		{"steady leak", series(func(at time.Duration) int64 { return base + int64(at/time.Second)*(base/200) }), false},
		{"a jump late", series(func(at time.Duration) int64 {
			if at == loadDuration {
				return base + base/5
			}
			return base
		}), false},
		{"no samples", nil, false},
		{"samples stop early", series(func(at time.Duration) int64 {
			if at > rssWarmup+rssWindow {
				return 0
			}
			return base
		}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			verdict, err := rssFlat(tc.samples)
			if got := err == nil; got != tc.flat {
				t.Errorf("flat = %v (%q, %v), want %v", got, verdict, err, tc.flat)
			}
		})
	}
}
