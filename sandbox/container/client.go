package container

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The handful of Docker Engine API calls the backend makes, over a unix
// socket, with the standard library. See DECISIONS in the package doc for
// why this is not the moby client.

// APIVersion is the Engine API version every request names: v1.41 is what
// Docker 20.10 and Podman 3 and 4 serve, and every later Docker still
// accepts it.
const APIVersion = "1.41"

// LibpodAPIVersion is the version named for Podman's own endpoints
// (/libpod/...), which the backend uses only where the Docker-compatible
// API hides something (the OCI runtime Podman chose).
const LibpodAPIVersion = "4.0.0"

// MaxResponse bounds the body of one API response the client reads (not
// the command's output, which is bounded by Limits.Output).
const MaxResponse = 1 << 20

// DialTimeout bounds connecting to the engine's socket.
const DialTimeout = 5 * time.Second

type client struct {
	socket string
	http   *http.Client
}

func newClient(socket string) *client {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		d := net.Dialer{Timeout: DialTimeout}
		return d.DialContext(ctx, "unix", socket)
	}
	return &client{
		socket: socket,
		http: &http.Client{Transport: &http.Transport{
			DialContext:         dial,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     30 * time.Second,
		}},
	}
}

// apiError is a non-2xx answer from the engine.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("engine answered %d: %s", e.Status, e.Message)
}

func isStatus(err error, status int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == status
}

// do sends one request and decodes a JSON answer into out (if not nil).
func (c *client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	version := APIVersion
	if strings.HasPrefix(path, "/libpod/") {
		version = LibpodAPIVersion
	}
	u := "http://engine/v" + version + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &apiError{Status: resp.StatusCode, Message: errorMessage(b)}
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("decode the engine's answer to %s %s: %w", method, path, err)
		}
	}
	return nil
}

// errorMessage is the "message" of an engine's error body, else the body.
func errorMessage(b []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil && e.Message != "" {
		return e.Message
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// attach opens the container's stdin, stdout and stderr before it starts:
// the engine takes the connection over (HTTP upgrade), and the rest of it
// is the raw multiplexed stream. The returned reader holds what the
// engine sent after its response header.
func (c *client) attach(ctx context.Context, id string) (*net.UnixConn, *bufio.Reader, error) {
	d := net.Dialer{Timeout: DialTimeout}
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		return nil, nil, err
	}
	uc := conn.(*net.UnixConn)
	path := "/v" + APIVersion + "/containers/" + url.PathEscape(id) + "/attach?stream=1&stdin=1&stdout=1&stderr=1"
	req := "POST " + path + " HTTP/1.1\r\nHost: engine\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 0\r\n\r\n"
	uc.SetDeadline(time.Now().Add(DialTimeout))
	if _, err := io.WriteString(uc, req); err != nil {
		uc.Close()
		return nil, nil, err
	}
	br := bufio.NewReader(uc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		uc.Close()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponse))
		uc.Close()
		return nil, nil, &apiError{Status: resp.StatusCode, Message: errorMessage(b)}
	}
	uc.SetDeadline(time.Time{})
	return uc, br, nil
}
