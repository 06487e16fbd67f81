package tools

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/schema"
	"airlock.dev/airlock/tool"
)

// fetchServer serves a page, and a redirect to the metadata address.
func fetchServer(t *testing.T, hits *atomic.Int32) (*httptest.Server, int) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/meta" {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<p>"+strings.Repeat("x", 100)+"</p>")
	}))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	port, _ := strconv.Atoi(u.Port())
	return s, port
}

func egressClient(t *testing.T, o *egress.Options) *egress.Client {
	t.Helper()
	c, err := egress.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWebFetch(t *testing.T) {
	var hits atomic.Int32
	s, port := fetchServer(t, &hits)
	// The test server's loopback address and port are allowed explicitly.
	tl := WebFetch(egressClient(t, &egress.Options{Ports: []int{80, 443, port},
		AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}))
	res := runTool(t, tl, `{"url":"`+s.URL+`/page"}`)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	want := "[" + s.URL + "/page: status 200, text/html; charset=utf-8, 107 bytes]\n<p>"
	if !strings.HasPrefix(res.Content, want) {
		t.Fatalf("got %q, want it to start %q", res.Content, want)
	}
	if res.Provenance != (tool.Provenance{Tool: "web_fetch", Source: "web:" + s.URL + "/page"}) {
		t.Fatalf("provenance %+v", res.Provenance)
	}
	res = runTool(t, tl, `{"url":"`+s.URL+`/page","max_bytes":10}`)
	if res.Error != nil || !strings.Contains(res.Content, "10 bytes, truncated at 10 bytes") || !strings.HasSuffix(res.Content, "]\n<p>xxxxxxx") {
		t.Fatalf("got %q, %v", res.Content, res.Error)
	}
	res = runTool(t, tl, `{"url":"`+s.URL+`/meta"}`)
	if res.Error == nil || res.Error.Code != egress.CodeRedirectDenied || !strings.Contains(res.Error.Message, "169.254.169.254") {
		t.Fatalf("the redirect to metadata: %+v", res)
	}
}

// TestWebFetchDenies proves the default policy refuses, with error values a
// model understands, and reaches nothing.
func TestWebFetchDenies(t *testing.T) {
	var hits atomic.Int32
	s, port := fetchServer(t, &hits)
	tl := WebFetch(egressClient(t, &egress.Options{Ports: []int{80, 443, port}}))
	for _, tc := range []struct {
		url  string
		code tool.Code
		msg  string
	}{
		{s.URL, egress.CodeDenied, "127.0.0.1 is a loopback address; only public hosts on ports 80, 443 and " + strconv.Itoa(port) + " are allowed"},
		{"http://10.0.0.5/", egress.CodeDenied, "10.0.0.5 is a private address (RFC 1918)"},
		{"http://169.254.169.254/latest/", egress.CodeDenied, "cloud metadata"},
		{"http://0x7f.1/", egress.CodeInvalidURL, "non-canonical IPv4"},
		{"http://a.com#@b.com/", egress.CodeInvalidURL, "@"},
	} {
		res := runTool(t, tl, `{"url":`+strconv.Quote(tc.url)+`}`)
		if res.Error == nil || res.Error.Code != tc.code || !strings.Contains(res.Error.Message, tc.msg) || res.Error.Hint == "" {
			t.Errorf("%s: got %+v, want %s saying %q", tc.url, res.Error, tc.code, tc.msg)
		}
		if res.Provenance.Tool != "web_fetch" {
			t.Errorf("%s: provenance %+v", tc.url, res.Provenance)
		}
	}
	if hits.Load() != 0 {
		t.Fatal("the loopback server was reached")
	}
}

// nxdomain answers every name "no such host".
type nxdomain struct{}

func (nxdomain) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", IsNotFound: true}
}

func TestWebFetchUnresolvable(t *testing.T) {
	tl := WebFetch(egressClient(t, &egress.Options{Resolver: nxdomain{}}))
	res := runTool(t, tl, `{"url":"https://no-such-host.example/"}`)
	if res.Error == nil || res.Error.Code != egress.CodeUnresolvable ||
		res.Error.Message != "the host no-such-host.example does not resolve" || res.Error.Hint == "" {
		t.Fatalf("got %+v", res.Error)
	}
}

// countingPins answers from pins and counts the queries.
type countingPins struct {
	pins    egress.Pins
	queries atomic.Int32
}

func (r *countingPins) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.queries.Add(1)
	return r.pins.Resolver(nxdomain{}).LookupNetIP(ctx, network, host)
}

// TestWebFetchGuard: the guard judges the URL as written and resolves
// nothing; the addresses a name resolves to are the executor's to judge.
func TestWebFetchGuard(t *testing.T) {
	r := &countingPins{pins: egress.Pins{"inside.example": {netip.MustParseAddr("10.1.1.1")}}}
	c := egressClient(t, &egress.Options{Resolver: r})
	guard := WebFetchGuard(c)
	if e := guard(context.Background(), map[string]any{"url": "http://inside.example/"}); e != nil {
		t.Fatalf("a host name was refused before it was resolved: %+v", e)
	}
	if e := guard(context.Background(), map[string]any{"url": "http://10.1.1.1/"}); e == nil || e.Code != egress.CodeDenied {
		t.Fatalf("a private IP literal: got %+v", e)
	}
	if e := guard(context.Background(), map[string]any{"url": "https://93.184.216.34/"}); e != nil {
		t.Fatalf("a public address was refused: %+v", e)
	}
	if n := r.queries.Load(); n != 0 {
		t.Fatalf("the guard sent %d queries, want none", n)
	}
	res := runTool(t, WebFetch(c), `{"url":"http://inside.example/"}`)
	if res.Error == nil || res.Error.Code != egress.CodeDenied || !strings.Contains(res.Error.Message, "resolves to 10.1.1.1") {
		t.Fatalf("the fetch: got %+v", res.Error)
	}
}

// TestWebFetchSchema: the schema is bounded, the gate accepts the tool, and
// the schema refuses what it can on its own.
func TestWebFetchSchema(t *testing.T) {
	tl := WebFetch(egressClient(t, nil))
	if tl.Risk != tool.RiskMedium || tl.Effect != tool.EffectExternal {
		t.Fatalf("risk %s, effect %s", tl.Risk, tl.Effect)
	}
	if err := schema.CheckBounded(tl.Schema); err != nil {
		t.Fatal(err)
	}
	s, err := schema.Compile(tl.Name, tl.Schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{}`, `{"url":"ftp://a.com/"}`, `{"url":"http://u@a.com/"}`, `{"url":"https://a.com/","max_bytes":0}`,
		`{"url":"https://a.com/","max_bytes":` + strconv.Itoa(WebFetchMaxBytes+1) + `}`, `{"url":"https://a.com/","headers":{}}`} {
		if e := s.Validate(json.RawMessage(bad)); e == nil {
			t.Errorf("the schema accepted %s", bad)
		}
	}
	if e := s.Validate(json.RawMessage(`{"url":"https://example.com/","max_bytes":100}`)); e != nil {
		t.Fatal(e)
	}
	reg := tool.NewRegistry()
	if err := reg.Register(tl); err != nil {
		t.Fatal(err)
	}
	if _, err := gate.New(reg, &gate.Options{Policy: policy.Default(),
		Without: gate.WithoutAudit | gate.WithoutLedger | gate.WithoutRedactor | gate.WithoutSessions | gate.WithoutApprovalKey}); err != nil {
		t.Fatal(err)
	}
}

// TestWebFetchTaintedRedirect: in a session that took in untrusted
// content (Call.Tainted) a redirect to another host comes back, with
// where it points, and nothing is sent there; otherwise it is followed.
func TestWebFetchTaintedRedirect(t *testing.T) {
	var otherHits atomic.Int32
	other, otherPort := fetchServer(t, &otherHits)
	target := strings.Replace(other.URL, "127.0.0.1", "other.example", 1) + "/leak?d=secret"
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	}))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	port, _ := strconv.Atoi(u.Port())
	tl := WebFetch(egressClient(t, &egress.Options{Ports: []int{port, otherPort},
		AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Resolver:   egress.Pins{"other.example": {netip.MustParseAddr("127.0.0.1")}}.Resolver(nil)}))
	run := func(tainted bool) tool.Result {
		res, err := tl.Run(context.Background(), &tool.Call{Tool: tl.Name, Args: json.RawMessage(`{"url":"` + s.URL + `/go"}`), Tainted: tainted})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(true)
	if res.Error != nil || !strings.Contains(res.Content, "status 302") || !strings.Contains(res.Content, "redirects to "+target+", not followed") || otherHits.Load() != 0 {
		t.Fatalf("tainted: %q %+v, %d hits on the other host; want the redirect handed back, nothing sent", res.Content, res.Error, otherHits.Load())
	}
	if res := run(false); res.Error != nil || !strings.Contains(res.Content, "status 200") || otherHits.Load() != 1 {
		t.Fatalf("not tainted: %q %+v; want the redirect followed", res.Content, res.Error)
	}
}
