package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/gate"
)

// HTTP limits and timeouts. Each has an HTTPOptions field; zero there
// means the default here.
const (
	// DefaultMaxBodyBytes bounds one request body; a longer one is
	// refused with 413 before any of it reaches the SDK.
	DefaultMaxBodyBytes = DefaultMaxMessageBytes
	// DefaultReadTimeout bounds reading one whole request, body included.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds writing one response. It outlasts a call
	// that waits for approval (DefaultApprovalTimeout plus the gate's
	// deadline); a client re-opens its standalone event stream after it.
	DefaultWriteTimeout = 10 * time.Minute
	// DefaultIdleTimeout bounds an idle keep-alive connection.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultSessionTimeout closes an MCP session that has had no request
	// for this long, so that abandoned sessions do not pile up.
	DefaultSessionTimeout = 30 * time.Minute
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes = 64 << 10
	// ShutdownTimeout is how long ListenAndServe lets requests in flight
	// finish once its context is cancelled, before it closes them.
	ShutdownTimeout = 10 * time.Second
	// MinTokenBytes is the shortest bearer token NewHTTPHandler accepts.
	MinTokenBytes = 16
)

// HTTPOptions configures the Streamable HTTP door. A nil *HTTPOptions is
// all defaults: local clients only, no tokens.
type HTTPOptions struct {
	// Addr is where ListenAndServe listens, such as "127.0.0.1:8731".
	Addr string
	// Tokens maps each bearer token to the role of its callers. When it is
	// empty, no token is asked for and every caller has Options.Role; then
	// ListenAndServe refuses an Addr that is not a loopback address.
	Tokens map[string]string
	// AllowedHosts are the Host headers served, as "name" (any port) or
	// "name:port". Empty means localhost, 127.0.0.1 and [::1], any port.
	// Any other Host is refused with 403, which defeats DNS rebinding.
	AllowedHosts []string
	// AllowedOrigins are the Origin headers served, when a request has
	// one, as exact origins ("https://console.example", the default port,
	// or "http://localhost:3000") or with any port ("http://localhost:*").
	// Empty means http and https on localhost, 127.0.0.1 and [::1], any
	// port. Any other Origin is refused with 403.
	AllowedOrigins []string
	// MaxBodyBytes bounds one request body; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// ReadTimeout, WriteTimeout and IdleTimeout are the http.Server's;
	// zero means DefaultReadTimeout, DefaultWriteTimeout, DefaultIdleTimeout.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// SessionTimeout closes an idle MCP session; zero means
	// DefaultSessionTimeout. Replicas keep no session to close.
	SessionTimeout time.Duration
	// Replicas serves every MCP session on every replica that shares
	// SessionKey and the store (Options.Sessions, and the gate's): the
	// SDK serves each request statelessly and airlock keeps the session,
	// as a signed Mcp-Session-Id (see replicas.go). NewHTTPHandler
	// refuses it without Options.Sessions or with a short SessionKey.
	Replicas bool
	// SessionKey signs session ids and approval request states under
	// Replicas; every replica of a deployment has the same secret, at
	// least MinSessionKeyBytes long.
	SessionKey []byte
}

func (h *HTTPOptions) withDefaults() HTTPOptions {
	var o HTTPOptions
	if h != nil {
		o = *h
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	return o
}

// loopbackNames are the hosts served when AllowedHosts or AllowedOrigins
// is empty.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// NewHTTPHandler returns the Streamable HTTP door: MCP at /mcp and a
// health check at /healthz. Before the SDK sees a request, the handler
// checks its Host and Origin (403), its bearer token when tokens are
// configured (401) and its size (413). The token's role goes with the
// request to the gate, and a session stays bound to the token that opened
// it.
func NewHTTPHandler(g *gate.Gate, opts *Options, h *HTTPOptions) (http.Handler, error) {
	o := opts.withDefaults()
	ho := h.withDefaults()
	hosts, err := parseHosts(ho.AllowedHosts)
	if err != nil {
		return nil, err
	}
	origins, err := parseOrigins(ho.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	tokens, err := hashTokens(ho.Tokens)
	if err != nil {
		return nil, err
	}
	var stateKey []byte // nil: random, for this process alone
	if ho.Replicas {
		if o.Sessions == nil {
			return nil, errors.New("mcp: HTTPOptions.Replicas needs Options.Sessions, the store the replicas share: each replica would count a session's steps on its own")
		}
		if len(ho.SessionKey) < MinSessionKeyBytes {
			return nil, fmt.Errorf("mcp: HTTPOptions.Replicas needs a SessionKey of at least MinSessionKeyBytes (%d), the same secret on every replica", MinSessionKeyBytes)
		}
		stateKey = ho.SessionKey
	}
	srv := newServer(g, &o, len(tokens) > 0, stateKey)
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		Stateless:           ho.Replicas,
		Logger:              o.Logger,
		SessionTimeout:      ho.SessionTimeout,
		MaxRequestBodyBytes: ho.MaxBodyBytes,
		// The Host check below is the DNS rebinding protection, and it is
		// stricter: the SDK's would refuse a configured non-local name
		// reached through a local proxy.
		DisableLocalhostProtection: true,
	})
	var inner http.Handler = mcpHandler
	if ho.Replicas {
		inner = &replicaSessions{key: ho.SessionKey, next: inner}
	}
	if len(tokens) > 0 {
		// The SDK's middleware puts the TokenInfo where the SDK passes it
		// to tool handlers (RequestExtra.TokenInfo) and checks each
		// session's requests against its UserID (with Replicas, the
		// session id's tag binds it); requireToken has already verified
		// the token and answered 401 otherwise.
		inner = requireToken(tokens, auth.RequireBearerToken(verifiedToken, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(inner))
	}
	guarded := &guard{hosts: hosts, origins: origins, maxBody: ho.MaxBodyBytes, next: inner}
	mux := http.NewServeMux()
	mux.Handle("/mcp", guarded)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok"))
	})
	return mux, nil
}

// guard refuses, before anything else reads a request, a Host or Origin
// that is not allowed (403) and a body that is too large (413).
type guard struct {
	hosts   []hostPattern
	origins []originPattern
	maxBody int64
	next    http.Handler
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.hostAllowed(r.Host) {
		http.Error(w, "forbidden: the Host header is not one this server answers to (AllowedHosts)", http.StatusForbidden)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin) {
		http.Error(w, "forbidden: the Origin is not allowed (AllowedOrigins)", http.StatusForbidden)
		return
	}
	if r.ContentLength > g.maxBody {
		http.Error(w, fmt.Sprintf("the request body is larger than MaxBodyBytes (%d bytes)", g.maxBody), http.StatusRequestEntityTooLarge)
		return
	}
	if r.Body != nil {
		// The SDK answers 413 when a read hits this limit.
		r.Body = http.MaxBytesReader(w, r.Body, g.maxBody)
	}
	g.next.ServeHTTP(w, r)
}

// hostPattern is one allowed host: a name, and a port or "" for any.
type hostPattern struct{ name, port string }

func (p hostPattern) match(name, port string) bool {
	return p.name == name && (p.port == "" || p.port == port)
}

// splitHost splits "name", "name:port", "[v6]" or "[v6]:port" into a
// lower-case name without brackets and a port.
func splitHost(s string) (name, port string) {
	if h, p, err := net.SplitHostPort(s); err == nil {
		return strings.ToLower(h), p
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")), ""
}

func parseHosts(list []string) ([]hostPattern, error) {
	if len(list) == 0 {
		list = loopbackNames
	}
	out := make([]hostPattern, 0, len(list))
	for _, s := range list {
		name, port := splitHost(strings.TrimSpace(s))
		if !validHost(name, port) {
			return nil, fmt.Errorf("mcp: AllowedHosts: %q is not a host name or host:port", s)
		}
		out = append(out, hostPattern{name, port})
	}
	return out, nil
}

// validHost reports whether name is a plausible DNS name or IP address
// and port is empty or a number.
func validHost(name, port string) bool {
	if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789.-:") != "" {
		return false
	}
	if strings.Contains(name, ":") && net.ParseIP(name) == nil {
		return false
	}
	return port == "" || strings.Trim(port, "0123456789") == ""
}

func (g *guard) hostAllowed(host string) bool {
	name, port := splitHost(host)
	for _, p := range g.hosts {
		if p.match(name, port) {
			return true
		}
	}
	return false
}

// originPattern is one allowed origin: a scheme and a host pattern whose
// port is "" for any.
type originPattern struct {
	scheme string
	host   hostPattern
}

// parseOrigin splits an origin into its scheme, name and port, the port
// made explicit (80 for http, 443 for https). A port of "*" is kept when
// wildcard is true. It refuses anything but scheme://host[:port].
func parseOrigin(s string, wildcard bool) (scheme, name, port string, ok bool) {
	rest, anyPort := strings.CutSuffix(s, ":*")
	if anyPort && !wildcard {
		return "", "", "", false
	}
	u, err := url.Parse(rest)
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", "", "", false
	}
	scheme = strings.ToLower(u.Scheme)
	name, port = splitHost(u.Host)
	switch {
	case scheme != "http" && scheme != "https", !validHost(name, port), anyPort && port != "":
		return "", "", "", false
	case anyPort:
		port = "*"
	case port == "" && scheme == "http":
		port = "80"
	case port == "":
		port = "443"
	}
	return scheme, name, port, true
}

func parseOrigins(list []string) ([]originPattern, error) {
	if len(list) == 0 {
		for _, scheme := range []string{"http", "https"} {
			for _, name := range loopbackNames {
				list = append(list, scheme+"://"+net.JoinHostPort(name, "*"))
			}
		}
	}
	out := make([]originPattern, 0, len(list))
	for _, s := range list {
		scheme, name, port, ok := parseOrigin(strings.TrimSpace(s), true)
		if !ok {
			return nil, fmt.Errorf("mcp: AllowedOrigins: %q is not an origin such as https://console.example or http://localhost:*", s)
		}
		if port == "*" {
			port = ""
		}
		out = append(out, originPattern{scheme, hostPattern{name, port}})
	}
	return out, nil
}

func (g *guard) originAllowed(origin string) bool {
	scheme, name, port, ok := parseOrigin(origin, false)
	if !ok {
		return false // "null" and anything but an origin
	}
	for _, p := range g.origins {
		if p.scheme == scheme && p.host.match(name, port) {
			return true
		}
	}
	return false
}

// tokenEntry is one configured token, kept only as its SHA-256, so that
// comparisons take the same time whatever the presented token's length.
type tokenEntry struct {
	sum  [sha256.Size]byte
	info *auth.TokenInfo
}

func hashTokens(tokens map[string]string) ([]tokenEntry, error) {
	out := make([]tokenEntry, 0, len(tokens))
	for tok, role := range tokens {
		if len(tok) < MinTokenBytes {
			return nil, fmt.Errorf("mcp: a token for role %q is shorter than MinTokenBytes (%d)", role, MinTokenBytes)
		}
		if role == "" {
			return nil, errors.New("mcp: a token has no role")
		}
		sum := sha256.Sum256([]byte(tok))
		out = append(out, tokenEntry{sum: sum, info: &auth.TokenInfo{
			// The UserID binds each MCP session to the token that opened
			// it; it names the token without revealing it.
			UserID: "token:" + hex.EncodeToString(sum[:8]),
			Extra:  map[string]any{roleExtraKey: role},
		}})
	}
	return out, nil
}

// lookupToken compares the presented token with every configured one, in
// constant time each and without stopping at a match.
func lookupToken(tokens []tokenEntry, presented string) *auth.TokenInfo {
	sum := sha256.Sum256([]byte(presented))
	var found *auth.TokenInfo
	for i := range tokens {
		if subtle.ConstantTimeCompare(sum[:], tokens[i].sum[:]) == 1 {
			found = tokens[i].info
		}
	}
	return found
}

// bearer returns the token of an "Authorization: Bearer TOKEN" header.
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "bearer") || tok == "" {
		return "", false
	}
	return tok, true
}

type verifiedKey struct{}

// requireToken answers 401 with a WWW-Authenticate challenge to a request
// without a valid token, and passes the token's info on to the next
// handler in the request's context.
func requireToken(tokens []tokenEntry, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
			http.Error(w, "unauthorized: send Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		info := lookupToken(tokens, tok)
		if info == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="airlock", error="invalid_token"`)
			http.Error(w, "unauthorized: the token is not valid", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), verifiedKey{}, info)))
	})
}

// verifiedToken is the SDK middleware's verifier: it returns what
// requireToken has already verified.
func verifiedToken(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
	if info, ok := ctx.Value(verifiedKey{}).(*auth.TokenInfo); ok {
		return info, nil
	}
	return nil, auth.ErrInvalidToken
}

// ListenAndServe serves handler on h.Addr with h's timeouts until ctx is
// cancelled, then shuts down: requests in flight get ShutdownTimeout to
// finish before their connections are closed. It returns nil after a
// shutdown.
func ListenAndServe(ctx context.Context, handler http.Handler, h *HTTPOptions) error {
	ho := h.withDefaults()
	if ho.Addr == "" {
		return errors.New("mcp: HTTPOptions.Addr is empty: give an address such as 127.0.0.1:8731")
	}
	if err := CheckExposure(ho.Addr, ho.Tokens); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", ho.Addr)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	return Serve(ctx, ln, handler, h)
}

// Serve is ListenAndServe on a listener the caller opened; it closes ln.
func Serve(ctx context.Context, ln net.Listener, handler http.Handler, h *HTTPOptions) error {
	ho := h.withDefaults()
	if err := CheckExposure(ln.Addr().String(), ho.Tokens); err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ho.ReadTimeout,
		WriteTimeout:      ho.WriteTimeout,
		IdleTimeout:       ho.IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("mcp: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close() // the drain ran out: close what is left
	}
	<-served
	return nil
}

// CheckExposure refuses to serve without tokens on an address other
// machines can reach: anyone there could call the tools. ListenAndServe
// and Serve apply it; a caller applies it too to refuse before it starts
// anything.
func CheckExposure(addr string, tokens map[string]string) error {
	if len(tokens) > 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("mcp: listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("mcp: refusing to serve on %q without tokens: listen on 127.0.0.1, or configure tokens", addr)
}
