package egress_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"airlock.dev/airlock/egress"
)

// TestProxyMasksCredentialInBody: a credentialed API that echoes the
// request (as /headers endpoints and error pages do) must not hand the
// credential to the sandboxed command through the proxy's response body.
func TestProxyMasksCredentialInBody(t *testing.T) {
	// A credentialed API that echoes the request headers in its body (as
	// httpbin /headers, many error pages and debugging endpoints do).
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "you sent Authorization=%s\n", r.Header.Get("Authorization"))
	}))
	port := ln.Addr().(*net.TCPAddr).Port
	c, err := egress.NewClient(&egress.Options{
		Ports: []int{port}, AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Resolver:    egress.Pins{"api.test": {netip.MustParseAddr("127.0.0.1")}}.Resolver(nil),
		Credentials: []egress.Credential{{Host: "api.test", Value: "Bearer s3cr3t-value-42", AllowHTTP: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	u := fmt.Sprintf("http://api.test:%d/headers", port)
	if r, err := c.Fetch(context.Background(), u, nil); err != nil || strings.Contains(r.Body, "s3cr3t-value-42") || !strings.Contains(r.Body, "you sent") {
		t.Fatalf("web_fetch: %+v, %v; want the echo, masked", r, err)
	}
	pl, _ := net.Listen("tcp", "127.0.0.1:0")
	go egress.NewProxy(c).Serve(context.Background(), pl)
	conn, _ := net.Dial("tcp", pl.Addr().String())
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n", u)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "you sent Authorization="+egress.Masked) || strings.Contains(string(b), "s3cr3t-value-42") {
		t.Errorf("the proxy's body: %q, want the credential masked", b)
	}
}
