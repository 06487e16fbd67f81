package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/schema"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
)

// The gateway's own codes, beside the gate's (package tool).
const (
	// CodeUpstreamUnavailable: the upstream server could not be reached,
	// or ended during the call; its other tools, and every other
	// server's, are unaffected.
	CodeUpstreamUnavailable tool.Code = "upstream_unavailable"
	// CodeToolChanged: the upstream changed the tool's definition since
	// it was pinned; the tool is disabled until a person accepts the
	// change.
	CodeToolChanged tool.Code = "tool_changed"
	// CodeToolFlagged: the tool's definition carries what looks like
	// injected instructions; it is hidden until a person accepts it.
	CodeToolFlagged tool.Code = "tool_flagged"
	// CodeUpstreamError: the upstream answered the call with a protocol
	// error rather than a result.
	CodeUpstreamError tool.Code = "upstream_error"
)

// MaxTools is the most tools one upstream may offer; past it the rest
// are left out, with a warning.
const MaxTools = 1000

// Options are what a gateway needs besides its config.
type Options struct {
	// Pins holds the pinned definitions (the runtime's store). Required:
	// a gateway that cannot pin offers nothing.
	Pins store.Pins
	// Credentials are the credentials file's entries: headers for an HTTP
	// upstream's exact host, and environment variables for a stdio one.
	Credentials []egress.Credential
	// Redact masks secrets in what upstreams write to stderr and in the
	// errors the gateway logs; nil masks only the credentials.
	Redact func(string) string
	// Logger receives upstream stderr and lifecycle events; nil discards.
	Logger *slog.Logger
	// Elicit, when set, takes an upstream's elicitation request (for a
	// server whose config relays it) to the person at the client whose
	// call is in flight (callCtx is that call's context).
	Elicit func(callCtx context.Context, server string, req *sdk.ElicitRequest) (*sdk.ElicitResult, error)
	// Bounds are the bounds added to upstream input schemas; nil means
	// schema's defaults.
	Bounds *schema.Bounds
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Gateway is an open gateway: its upstreams and the tools it offers.
type Gateway struct {
	cfg  *Config
	opts Options
	log  *slog.Logger
	ups  map[string]*upstream

	mu     sync.RWMutex
	tools  map[string]*entry // by the name the client sees
	extras map[string]*extra // prompts by the name the client sees, resources by URI
	// opened is set when Open has admitted every server's first
	// listing: a list_changed before then is kept in changed and acted
	// on after, so that the first definition seen is what is pinned.
	opened bool
	// changed holds the servers whose list_changed waits for a refresh.
	changed map[string]bool
	// announced are the new tools already logged as waiting for the next
	// start.
	announced map[string]bool
	// refreshing serializes the refreshes of each server.
	refreshing map[string]*sync.Mutex
}

// warn logs msg with err, redacted.
func (g *Gateway) warn(msg string, err error, args ...any) {
	g.log.Warn(msg, append(args, "error", g.opts.Redact(err.Error()))...)
}

// entry is one upstream tool as the gateway offers it.
type entry struct {
	name     string // the name the client sees: SERVER + separator + upstream name
	server   string
	upstream string    // the upstream's own name for it
	def      *sdk.Tool // the pinned definition
	state    State
	reason   string
}

// State is what the gateway makes of one upstream definition.
type State string

const (
	StateOffered State = "offered" // pinned and clean: listed, and callable
	StateChanged State = "changed" // differs from its pin: disabled until accepted
	StateFlagged State = "flagged" // its text looks injected: hidden until accepted
	StateHidden  State = "hidden"  // the config hides it
	StateInvalid State = "invalid" // its name or schema cannot be offered
	StateNew     State = "new"     // appeared after the gateway started: offered from the next start
)

// Open reads every upstream's tools (starting each, up to its
// StartTimeout), pins what it has not seen before, and returns the
// gateway. An upstream that cannot be reached is offered from its pins,
// its calls answering upstream_unavailable until it can; one that has
// neither is offered with no tools, and a warning.
func Open(ctx context.Context, cfg *Config, opts *Options) (*Gateway, error) {
	if opts == nil || opts.Pins == nil {
		return nil, errors.New("gateway: no store for pins (Options.Pins): a gateway that cannot pin tools offers none")
	}
	g := &Gateway{cfg: cfg, opts: *opts, ups: map[string]*upstream{}, tools: map[string]*entry{}, extras: map[string]*extra{},
		changed: map[string]bool{}, announced: map[string]bool{}, refreshing: map[string]*sync.Mutex{}}
	if g.opts.Now == nil {
		g.opts.Now = time.Now
	}
	g.log = g.opts.Logger
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	creds := credentialSecrets(g.opts.Credentials)
	redact := g.opts.Redact
	g.opts.Redact = func(s string) string {
		for _, v := range creds {
			s = strings.ReplaceAll(s, v, gate.SecretMask)
		}
		if redact != nil {
			s = redact(s)
		}
		return s
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		s := cfg.Servers[name]
		if s.Disabled {
			continue
		}
		u := &upstream{name: name, cfg: s, log: g.log, redact: g.opts.Redact, onListChanged: g.listChanged}
		if g.opts.Elicit != nil {
			u.elicit = g.relay(u)
		}
		if s.URL != "" {
			var err error
			if u.http, err = httpClient(s, g.opts.Credentials); err != nil {
				return nil, fmt.Errorf("gateway: server %s: %w", name, err)
			}
		} else {
			u.env = stdioEnv(s, envSecrets(name, g.opts.Credentials))
		}
		g.ups[name] = u
		g.refreshing[name] = new(sync.Mutex)
	}
	// Every upstream starts and is listed at once; each within its own
	// StartTimeout.
	type listing struct {
		tools     []*sdk.Tool
		prompts   []*sdk.Prompt
		resources []*sdk.Resource
	}
	var wg sync.WaitGroup
	lists := make(map[string]*listing, len(g.ups))
	var lmu sync.Mutex
	for name, u := range g.ups {
		wg.Go(func() {
			tools, err := u.listTools(ctx)
			if err != nil {
				g.warn("gateway: upstream offers its pinned tools until it can be reached", err, "server", name)
				return
			}
			l := &listing{tools: tools}
			if l.prompts, l.resources, err = u.listExtras(ctx); err != nil {
				g.warn("gateway: upstream's prompts and resources are left out", err, "server", name)
			}
			lmu.Lock()
			lists[name] = l
			lmu.Unlock()
		})
	}
	wg.Wait()
	for _, name := range slices.Sorted(maps.Keys(g.ups)) {
		l, listed := lists[name]
		if !listed {
			l = &listing{}
		}
		err := g.admit(ctx, name, l.tools, listed)
		if err == nil {
			err = g.admitExtras(ctx, name, l.prompts, l.resources)
		}
		if err != nil {
			g.Close()
			return nil, err
		}
	}
	g.mu.Lock()
	g.opened = true
	changed := slices.Sorted(maps.Keys(g.changed))
	clear(g.changed)
	g.mu.Unlock()
	for _, server := range changed {
		g.listChanged(server)
	}
	return g, nil
}

// listTools lists every tool the upstream offers, starting it if needed.
func (u *upstream) listTools(ctx context.Context) ([]*sdk.Tool, error) {
	cs, err := u.session(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, u.cfg.StartTimeout)
	defer cancel()
	return take(cs.Tools(ctx, nil), MaxTools, func() {
		u.log.Warn("gateway: upstream offers more than MaxTools tools; the rest are left out", "server", u.name, "max", MaxTools)
	})
}

// take collects a listing's items, at most max of them (calling over
// when there are more).
func take[T any](seq iter.Seq2[T, error], max int, over func()) ([]T, error) {
	var out []T
	for x, err := range seq {
		if err != nil {
			return nil, err
		}
		if len(out) == max {
			over()
			break
		}
		out = append(out, x)
	}
	return out, nil
}

// admit decides the state of each of a server's tools against its pins,
// and adds the entries. When the upstream could not be listed, its
// accepted pins stand in.
func (g *Gateway) admit(ctx context.Context, server string, listed []*sdk.Tool, ok bool) error {
	if !ok {
		pins, err := g.opts.Pins.ListPins(ctx, server)
		if err != nil {
			return fmt.Errorf("gateway: reading the pins of %s: %w", server, err)
		}
		for _, p := range pins {
			if p.Kind != store.PinTool || !p.Accepted || p.SeenHash != "" {
				continue
			}
			var t sdk.Tool
			if err := json.Unmarshal(p.Definition, &t); err != nil {
				g.log.Warn("gateway: a pinned definition does not decode; left out", "server", server, "tool", p.Name, "error", err)
				continue
			}
			g.add(server, &t, StateOffered, "")
		}
		return nil
	}
	for _, t := range listed {
		st, reason, def, err := g.reconcile(ctx, server, t)
		if err != nil {
			return err
		}
		g.add(server, def, st, reason)
	}
	return nil
}

// add makes the entry of one upstream tool, checking what the client
// would be shown: its name and its schema.
func (g *Gateway) add(server string, t *sdk.Tool, st State, reason string) {
	name := server + g.cfg.Separator + t.Name
	e := &entry{name: name, server: server, upstream: t.Name, def: t, state: st, reason: reason}
	if o, ok := g.cfg.Servers[server].Tools[t.Name]; ok && o.Hide && st == StateOffered {
		e.state, e.reason = StateHidden, "the gateway config hides it"
	}
	if !tool.ValidName(name) {
		e.state, e.reason = StateInvalid, fmt.Sprintf("its gateway name %q is not a name model APIs accept (letters, digits, _ and -, at most 64)", name)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, dup := g.tools[name]; dup {
		g.log.Warn("gateway: two tools have one gateway name; the second is left out", "tool", name)
		return
	}
	g.tools[name] = e
	if e.state != StateOffered {
		g.log.Warn("gateway: tool not offered", "tool", name, "state", e.state, "reason", e.reason)
	}
}

// Tools returns the tools to register: every upstream tool whose name
// and schema can be offered, offered or not (a disabled one answers its
// state's code, so that a call of it is audited and explains itself).
func (g *Gateway) Tools() []tool.Tool {
	g.mu.Lock() // an entry whose schema cannot be bounded is marked invalid
	defer g.mu.Unlock()
	var out []tool.Tool
	for _, name := range slices.Sorted(maps.Keys(g.tools)) {
		e := g.tools[name]
		if e.state == StateInvalid {
			continue
		}
		t, err := g.tool(e)
		if err != nil {
			e.state, e.reason = StateInvalid, err.Error()
			g.log.Warn("gateway: tool not offered", "tool", name, "state", e.state, "reason", e.reason)
			continue
		}
		out = append(out, t)
	}
	return out
}

// tool makes the tool.Tool of one entry.
func (g *Gateway) tool(e *entry) (tool.Tool, error) {
	raw, err := json.Marshal(e.def.InputSchema)
	if err != nil {
		return tool.Tool{}, fmt.Errorf("its input schema does not encode: %v", err)
	}
	bounded, err := schema.Bound(raw, g.opts.Bounds)
	if err != nil {
		return tool.Tool{}, fmt.Errorf("its input schema cannot be bounded: %v", err)
	}
	risk, effect, class := classify(e.def.Annotations, g.cfg.Servers[e.server].Tools[e.upstream])
	desc := strings.TrimSpace(e.def.Description)
	if desc == "" {
		desc = fmt.Sprintf("The %s tool of the %s MCP server.", e.upstream, e.server)
	}
	return tool.Tool{
		Name: e.name, Description: desc, Server: e.server,
		Schema: bounded, Risk: risk, Effect: effect, Class: class,
		Untrusted: true, Run: g.runner(e),
	}, nil
}

// classify gives a tool's risk, effect and class: from its annotations,
// then the config's overrides. A tool without annotations is medium risk
// with a write effect, so that by default it asks. The annotations are
// hints from the upstream, which may lie; they can only make a tool look
// safer to the extent the config and the mode allow, and the config can
// always say otherwise.
func classify(a *sdk.ToolAnnotations, o ToolConfig) (tool.Risk, tool.Effect, tool.Class) {
	risk, effect, class := tool.RiskMedium, tool.EffectWrite, tool.Class("")
	switch {
	case a == nil:
	case a.ReadOnlyHint:
		risk, effect = tool.RiskLow, tool.EffectRead
	default:
		if a.OpenWorldHint != nil && *a.OpenWorldHint {
			effect, class = tool.EffectExternal, tool.ClassEgress
		}
		if a.DestructiveHint != nil && *a.DestructiveHint {
			risk = tool.RiskHigh
		}
	}
	if o.Risk != "" {
		risk, _ = tool.ParseRisk(o.Risk)
	}
	if o.Effect != "" {
		effect, _ = tool.ParseEffect(o.Effect)
		if effect != tool.EffectExternal {
			class = ""
		}
	}
	if o.Class != "" {
		class = tool.Class(o.Class)
	}
	return risk, effect, class
}

// runner is the executor of one upstream tool.
func (g *Gateway) runner(e *entry) tool.Executor {
	return func(ctx context.Context, c *tool.Call) (tool.Result, error) {
		g.mu.RLock()
		st, reason := e.state, e.reason
		g.mu.RUnlock()
		switch st {
		case StateOffered:
		case StateChanged:
			return tool.Fail(CodeToolChanged, fmt.Sprintf("the %s server changed the definition of %s since it was pinned (%s); the tool is disabled", e.server, e.upstream, reason),
				fmt.Sprintf("Use another tool; a person can review the change with `airlock gateway pins` and accept it with `airlock gateway accept %s`", e.name)), nil
		case StateFlagged:
			return tool.Fail(CodeToolFlagged, fmt.Sprintf("the definition of %s looks like it carries injected instructions (%s); the tool is hidden", e.name, reason),
				fmt.Sprintf("Use another tool; a person can review it with `airlock gateway pins` and accept it with `airlock gateway accept %s`", e.name)), nil
		default:
			return tool.Fail(tool.CodeUnknownTool, fmt.Sprintf("%s is not offered: %s", e.name, reason), "Call a tool from tools/list"), nil
		}
		u := g.ups[e.server]
		return u.call(ctx, e, c, g.opts.Redact)
	}
}

// unavailable is the result of a call whose upstream cannot be reached.
func unavailable(server string, err error, redact func(string) string) tool.Result {
	hint := "Try again later, or use another server's tools"
	var ue *errUnavailable
	if errors.As(err, &ue) && !ue.retryAt.IsZero() {
		hint = fmt.Sprintf("Try again in %s, or use another server's tools", time.Until(ue.retryAt).Round(time.Second)+time.Second)
	}
	return tool.Fail(CodeUpstreamUnavailable, redact(fmt.Sprintf("the %s server cannot be reached: %v", server, err)), hint)
}

// call makes one tools/call on the upstream, within the server's timeout;
// the caller's cancellation is forwarded to it (the SDK sends
// notifications/cancelled).
func (u *upstream) call(ctx context.Context, e *entry, c *tool.Call, redact func(string) string) (tool.Result, error) {
	cs, err := u.session(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		return unavailable(e.server, err, redact), nil
	}
	callCtx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	u.begin(callCtx)
	defer u.end(callCtx)
	res, err := cs.CallTool(callCtx, &sdk.CallToolParams{Name: e.upstream, Arguments: json.RawMessage(c.Args)})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return tool.Result{}, ctx.Err() // the caller's own cancel or deadline: the gate names it
	case callCtx.Err() != nil:
		return tool.Fail(tool.CodeDeadlineExceeded, fmt.Sprintf("the %s server did not answer within %s (its timeout)", e.server, u.cfg.Timeout),
			"Try again with less work, or ask the operator to raise the server's timeout in the gateway config"), nil
	default:
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			return tool.Fail(CodeUpstreamError, fmt.Sprintf("the %s server refused the call (JSON-RPC error %d)", e.server, werr.Code),
				"Check the arguments against the tool's schema, or use another tool"), nil
		}
		// The connection ended (a crash, a malformed or oversized
		// message), or the answer could not be read: either way the
		// upstream may have acted. Its own words go to the log only.
		u.log.Warn("gateway: an upstream call ended without a result", "server", e.server, "tool", e.upstream, "error", redact(err.Error()))
		return tool.Fail(CodeUpstreamUnavailable, fmt.Sprintf("the %s server gave no result (it ended, or its answer could not be read); whether the call had its effect is unknown", e.server),
			"Check the effect before trying again; if the server ended, the next call starts it again"), nil
	}
	return result(e, res), nil
}

// relay gives an upstream's elicitation request to the client whose call
// it belongs to: the one call waiting on that upstream. With several
// calls in flight the gateway cannot tell which asked (stdio carries no
// such link), and refuses rather than ask the wrong person.
func (g *Gateway) relay(u *upstream) func(context.Context, string, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	return func(_ context.Context, server string, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		u.mu.Lock()
		var callCtx context.Context
		n := len(u.calls)
		for c := range u.calls {
			callCtx = c
		}
		u.mu.Unlock()
		if n != 1 {
			g.log.Warn("gateway: refused an elicitation request that belongs to no single call", "server", server, "calls_in_flight", n)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "airlock's gateway relays elicitation only during one call of this server"}
		}
		res, err := g.opts.Elicit(callCtx, server, req)
		if err != nil {
			g.warn("gateway: could not relay an elicitation request to the client", err, "server", server)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "airlock's gateway cannot ask the client: it takes no questions during a call (no elicitation capability, or protocol 2026-07-28, where questions come only with a call's result)"}
		}
		return res, nil
	}
}

// begin and end keep the contexts of the calls in flight, for relaying an
// elicitation to the one client whose call asked.
func (u *upstream) begin(ctx context.Context) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.calls == nil {
		u.calls = map[context.Context]bool{}
	}
	u.calls[ctx] = true
}

func (u *upstream) end(ctx context.Context) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.calls, ctx)
}

// result turns an upstream's CallToolResult into the content the gate
// redacts, scans and wraps: the text of each part, and a line naming each
// part that is not text. An upstream's isError result is its own words
// about a failure, delivered like any content but marked as an error.
func result(e *entry, res *sdk.CallToolResult) tool.Result {
	var b strings.Builder
	for _, c := range res.Content {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(contentText(c))
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			b.Write(raw)
		}
	}
	out := tool.Result{Content: b.String(), Provenance: tool.Provenance{Tool: e.name, Source: "mcp:" + e.server + "/" + e.upstream}}
	out.IsError = res.IsError
	return out
}

// contentText is a content part as text: its text, or a line naming a
// part that is not text, which is not passed on (the gate redacts and
// scans text only).
func contentText(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return fmt.Sprintf("[image: %s, %d bytes, not shown]", c.MIMEType, len(c.Data))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio: %s, %d bytes, not shown]", c.MIMEType, len(c.Data))
	case *sdk.ResourceLink:
		return "[resource link: " + c.URI + "]"
	case *sdk.EmbeddedResource:
		if c.Resource != nil && c.Resource.Text != "" {
			return c.Resource.Text
		}
		if c.Resource != nil {
			return fmt.Sprintf("[resource: %s, %d bytes, not shown]", c.Resource.URI, len(c.Resource.Blob))
		}
	}
	return "[content of an unknown kind, not shown]"
}

// Close ends every upstream connection.
func (g *Gateway) Close() error {
	var wg sync.WaitGroup
	for _, u := range g.ups {
		wg.Go(u.close)
	}
	wg.Wait()
	return nil
}

// listChanged re-reads a server's tools when it says they changed, so
// that a changed definition is noticed (and disabled) at once.
//
// Notifications that come while a refresh of the server waits to start
// are one refresh: an upstream that registers its tools one by one sends
// a burst of them.
func (g *Gateway) listChanged(server string) {
	g.mu.Lock()
	queued := g.changed[server]
	g.changed[server] = true
	opened := g.opened
	g.mu.Unlock()
	if !opened || queued {
		return // Open acts on it when done, or a refresh is waiting to start
	}
	go func() {
		g.refreshing[server].Lock()
		defer g.refreshing[server].Unlock()
		g.mu.Lock()
		delete(g.changed, server) // a notification from now on asks for another refresh
		g.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), g.cfg.Servers[server].StartTimeout)
		defer cancel()
		if err := g.refresh(ctx, server); err != nil {
			g.warn("gateway: re-reading the tools failed", err, "server", server)
		}
	}()
}

// Refresh lists a server's tools, prompts and resources again and
// reconciles each with its pin: a changed definition disables what it
// defines, a new one waits for the next start.
func (g *Gateway) Refresh(ctx context.Context, server string) error {
	mu, ok := g.refreshing[server]
	if !ok {
		return fmt.Errorf("no server %q", server)
	}
	mu.Lock()
	defer mu.Unlock()
	return g.refresh(ctx, server)
}

// refresh is Refresh, with the server's refresh lock held.
func (g *Gateway) refresh(ctx context.Context, server string) error {
	u := g.ups[server]
	tools, err := u.listTools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		st, reason, _, err := g.reconcile(ctx, server, t)
		if err != nil {
			return err
		}
		name := server + g.cfg.Separator + t.Name
		g.mu.Lock()
		e, known := g.tools[name]
		switch {
		case !known && !g.announced[name]:
			g.announced[name] = true
			g.log.Warn("gateway: the upstream offers a new tool; it is offered from the next start", "tool", name)
		case e.state == StateOffered && st != StateOffered:
			e.state, e.reason = st, reason
			g.log.Warn("gateway: tool disabled", "tool", name, "state", st, "reason", reason)
		}
		g.mu.Unlock()
	}
	prompts, resources, err := u.listExtras(ctx)
	if err != nil {
		return err
	}
	return g.refreshExtras(ctx, server, prompts, resources)
}

// Visible says whether the client is shown a tool: every tool that is
// not an offered upstream tool of this gateway (airlock's own) is.
func (g *Gateway) Visible(name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	e, ok := g.tools[name]
	return !ok || e.state == StateOffered
}

// ToolState is one upstream tool as `airlock gateway status` shows it.
type ToolState struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	State  State  `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// States lists every upstream tool's state, by name.
func (g *Gateway) States() []ToolState {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []ToolState
	for _, name := range slices.Sorted(maps.Keys(g.tools)) {
		e := g.tools[name]
		out = append(out, ToolState{Name: name, Server: e.server, State: e.state, Reason: e.reason})
	}
	return out
}

// httpClient is an HTTP upstream's client: its headers and credentials go
// to the configured host and port only, a redirect elsewhere is refused,
// and no proxy from the environment sees them.
func httpClient(s *Server, creds []egress.Credential) (http.Client, error) {
	u, err := url.Parse(s.URL) // checked by Config.Check
	if err != nil {
		return http.Client{}, err
	}
	headers, err := httpHeaders(s, creds)
	if err != nil {
		return http.Client{}, err
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.Proxy = nil
	return http.Client{
		Transport: &headerTransport{host: u.Host, headers: headers, next: base},
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if r.URL.Host != u.Host || len(via) >= 5 {
				return fmt.Errorf("the upstream redirected to %s; the gateway follows redirects only within %s, at most 5", r.URL.Host, u.Host)
			}
			return nil
		},
	}, nil
}

// headerTransport adds an HTTP upstream's headers to each request to its
// own host.
type headerTransport struct {
	host    string
	headers http.Header
	next    http.RoundTripper
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == t.host {
		r = r.Clone(r.Context())
		for k, vs := range t.headers {
			r.Header[k] = vs
		}
	}
	return t.next.RoundTrip(r)
}

// httpHeaders are an HTTP upstream's headers: the config's, then the
// credentials for the URL's exact host (egress.HeadersFor).
func httpHeaders(s *Server, creds []egress.Credential) (http.Header, error) {
	h := http.Header{}
	for k, v := range s.Headers {
		h.Set(k, v)
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil, err
	}
	fromCreds, err := egress.HeadersFor(creds, u)
	if err != nil {
		return nil, err
	}
	for k, vs := range fromCreds {
		h[k] = vs
	}
	return h, nil
}

// envSecrets are the credentials a stdio upstream gets as environment
// variables.
func envSecrets(server string, creds []egress.Credential) map[string]string {
	out := map[string]string{}
	for _, c := range creds {
		if c.Server == server && c.Variable != "" {
			out[c.Variable] = c.Value
		}
	}
	return out
}

// credentialSecrets are every credential's value, for masking.
func credentialSecrets(creds []egress.Credential) []string {
	var out []string
	for _, c := range creds {
		if len(c.Value) >= egress.MinMaskedValueLength {
			out = append(out, c.Value)
		}
	}
	return out
}
