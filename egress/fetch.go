package egress

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"airlock.dev/airlock/tool"
)

// UserAgent is what egress's requests call themselves.
const UserAgent = "airlock-egress/1"

// FetchOptions adjusts one fetch. A nil *FetchOptions means the client's
// limits.
type FetchOptions struct {
	// MaxBytes caps the decoded body returned; zero, or more than the
	// client's MaxBodyBytes, means MaxBodyBytes.
	MaxBytes int64
	// SameHost follows only redirects to the host the URL names; one to
	// another host is returned as the response, its Location unvisited
	// and unresolved, for the caller to judge as a request of its own.
	// For a session whose destinations a person must vouch for (a
	// tainted one): an open redirect on a host the user named must not
	// carry the request on to one they did not.
	SameHost bool
}

// Response is a fetched resource, its body as text.
type Response struct {
	URL    string `json:"url"` // the final URL, after redirects
	Status int    `json:"status"`
	// Location is where a redirect that was not followed points
	// (FetchOptions.SameHost, NoRedirects).
	Location    string `json:"location,omitempty"`
	ContentType string `json:"content_type"`
	Body        string `json:"body"`
	Truncated   bool   `json:"truncated"` // the body was longer than the limit and was cut
}

// Fetch GETs a URL under the policy, following checked redirects, and
// returns the body as text, cut at the size limit. A refusal (policy,
// size, type, timeout, a server that cannot be reached) is a *tool.Error
// with an egress code; another error is the caller's context ending.
// Injected credential values are masked in the body.
func (c *Client) Fetch(ctx context.Context, rawURL string, fo *FetchOptions) (*Response, error) {
	if c == nil || c.pol == nil {
		return nil, errUnconfigured
	}
	limit := c.opts.MaxBodyBytes
	if fo != nil && fo.MaxBytes > 0 && fo.MaxBytes < limit {
		limit = fo.MaxBytes
	}
	t, addrs, e := c.resolveTarget(ctx, rawURL)
	if e != nil {
		return nil, e
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	cache := &resolved{m: map[string][]netip.Addr{t.Host: addrs}}
	ctx = context.WithValue(ctx, resolvedKey{}, cache)
	if fo != nil && fo.SameHost {
		ctx = context.WithValue(ctx, sameHostKey{}, t.URL.Hostname())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL.String(), nil)
	if err != nil {
		return nil, invalidURL("the URL cannot be requested")
	}
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.fetchError(ctx, t.Host, err)
	}
	defer resp.Body.Close()
	out := &Response{URL: resp.Request.URL.String(), Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type")}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// Not followed (NoRedirects, SameHost): the status and Location
		// say where.
		if loc, err := resp.Location(); err == nil {
			out.Location = loc.String()
		}
		return out, nil
	}
	mt, ok := mediaTypeAllowed(out.ContentType, c.opts.ContentTypes)
	if !ok && resp.ContentLength != 0 {
		what := fmt.Sprintf("%q", truncate(mt, 64))
		if out.ContentType == "" {
			what = "not declared"
		}
		return nil, &tool.Error{Code: CodeContentType,
			Message: fmt.Sprintf("the response's content type is %s; only text types are fetched (%s)", what, truncate(strings.Join(c.opts.ContentTypes, ", "), 200)),
			Hint:    "Fetch a text, JSON or XML resource instead"}
	}
	body, truncated, e := readBody(resp.Body, resp.Header.Get("Content-Encoding"), limit, c.opts.MaxDecodeRatio)
	if e != nil {
		if ctx.Err() != nil && e.Code == CodeConnectionFailed {
			return nil, timeoutError("the fetch")
		}
		return nil, e
	}
	out.Body = c.creds.mask(text(body, truncated))
	if int64(len(out.Body)) > limit {
		// Replacement characters for invalid bytes, or masks, grew it.
		out.Body, truncated = cut(out.Body, int(limit)), true
	}
	out.Truncated = truncated
	return out, nil
}

// fetchError turns what http.Client.Do returned into a refusal.
func (c *Client) fetchError(ctx context.Context, host string, err error) error {
	var te *tool.Error
	switch {
	case errors.As(err, &te):
		return te
	case isTimeout(err) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return timeoutError("fetching " + host)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return &tool.Error{Code: CodeConnectionFailed,
		Message: fmt.Sprintf("%s could not be reached: %s", host, truncate(rootCause(err).Error(), 160)),
		Hint:    "Check the URL; the server may be down. Try again later, or fetch another host"}
}

// rootCause unwraps an error to the innermost cause, which says what
// happened without repeating the URL.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
