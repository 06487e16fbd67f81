package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"airlock.dev/airlock/tool"
)

// Proxy is an HTTP proxy under the client's policy, for sandboxed
// commands: CONNECT for https (a tunnel to a checked address; the TLS
// inside is the command's own) and absolute-form requests for http. A
// refusal is a 403 whose body and X-Airlock-Error header say why. It does
// not apply the fetch's content-type and size limits: a command may
// download what its policy lets it reach.
//
// Credentials are attached to absolute-form requests only: a CONNECT
// tunnel is the command's own TLS, which airlock does not open. A command
// that needs a host's credential sends a plain http:// request to the
// proxy; when the host has an https-only credential, the proxy sends it
// on over https (port 80 becomes 443), so the credential never travels in
// clear and the command never holds it.
type Proxy struct {
	c *Client
}

// NewProxy returns a proxy that applies c's policy and credentials.
func NewProxy(c *Client) *Proxy { return &Proxy{c: c} }

// ErrorHeader names the header a refusal's code is sent in.
const ErrorHeader = "X-Airlock-Error"

// hopHeaders are the hop-by-hop headers a proxy must not forward.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() {
		refuse(w, http.StatusBadRequest, invalidURL("a proxy request must name an absolute http:// URL, or use CONNECT for https"))
		return
	}
	p.forward(w, r)
}

// refuse writes a refusal: status, the code in ErrorHeader, and
// "code: message\nhint: hint" as the body.
func refuse(w http.ResponseWriter, status int, e *tool.Error) {
	w.Header().Set(ErrorHeader, string(e.Code))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, e.Error()+"\nhint: "+e.Hint+"\n")
}

func refusalStatus(e *tool.Error) int {
	switch e.Code {
	case CodeDenied, CodeRedirectDenied:
		return http.StatusForbidden
	case CodeInvalidURL:
		return http.StatusBadRequest
	case CodeTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

func asRefusal(err error) *tool.Error {
	var te *tool.Error
	if errors.As(err, &te) {
		return te
	}
	if isTimeout(err) {
		return timeoutError("connecting")
	}
	return &tool.Error{Code: CodeConnectionFailed, Message: "the host could not be reached: " + truncate(rootCause(err).Error(), 160),
		Hint: "Check the host; the server may be down"}
}

// connect opens a tunnel to a checked address: the dialer resolves the
// host, once, and checks every address.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	t, e := p.c.target("https://" + r.Host + "/")
	if e != nil {
		refuse(w, refusalStatus(e), e)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		refuse(w, http.StatusInternalServerError, &tool.Error{Code: CodeConnectionFailed, Message: "the proxy cannot open tunnels here", Hint: "Use http"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.c.opts.ConnectTimeout)
	upstream, err := p.c.DialContext(ctx, "tcp", net.JoinHostPort(t.Host, strconv.Itoa(t.Port)))
	cancel()
	if err != nil {
		e := asRefusal(err)
		refuse(w, refusalStatus(e), e)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	deadline := time.Now().Add(p.c.opts.TunnelTimeout)
	client.SetDeadline(deadline)
	upstream.SetDeadline(deadline)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		// Bytes the client sent after the CONNECT line, already buffered.
		if n := buf.Reader.Buffered(); n > 0 {
			b, _ := buf.Reader.Peek(n)
			upstream.Write(b)
		}
		io.Copy(upstream, client)
		closeWrite(upstream)
	}()
	go func() {
		defer wg.Done()
		io.Copy(client, upstream)
		closeWrite(client)
	}()
	wg.Wait()
	client.Close()
	upstream.Close()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// forward sends an absolute-form request on through the guarded
// transport; redirects are the client's to follow, each a new request.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	t, addrs, e := p.c.resolveTarget(r.Context(), r.URL.String())
	if e != nil {
		refuse(w, refusalStatus(e), e)
		return
	}
	if t.URL.Scheme == "http" && p.c.creds.httpsOnly(t.Host) {
		// The command's plain request reaches airlock only; the leg that
		// carries the credential goes out over TLS.
		t.URL.Scheme = "https"
		if t.Port == 80 {
			t.Port, t.URL.Host = 443, t.hostPort(443)
		}
		if e := p.c.pol.checkTarget(t); e != nil {
			refuse(w, refusalStatus(e), e)
			return
		}
	}
	ctx := context.WithValue(r.Context(), resolvedKey{}, &resolved{m: map[string][]netip.Addr{t.Host: addrs}})
	out := r.Clone(ctx)
	out.RequestURI = ""
	out.URL = t.URL
	out.Host = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if c := r.Header.Get("Connection"); c != "" {
		for _, name := range strings.Split(c, ",") {
			out.Header.Del(strings.TrimSpace(name))
		}
	}
	resp, err := p.c.transport.RoundTrip(out)
	if err != nil {
		e := asRefusal(err)
		refuse(w, refusalStatus(e), e)
		return
	}
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	// The body is masked too: a server that echoes a request (its
	// Authorization header) must not hand the credential to the command.
	// Masking changes the length.
	mw := newMaskWriter(w, p.c.creds.values)
	if len(mw.values) > 0 {
		w.Header().Del("Content-Length")
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(mw, resp.Body)
	mw.Close()
}

// Serve answers proxy requests on l until ctx ends, with a header timeout
// so that a slow client cannot hold a connection open unanswered.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: p.c.opts.HeaderTimeout, MaxHeaderBytes: MaxResponseHeaderBytes}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	err := srv.Serve(l)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
