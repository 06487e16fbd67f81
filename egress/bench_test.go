package egress

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkFetch measures what the guard adds to one fetch of a small
// page from a local server: the guarded client (parse, policy, resolve,
// checked dial, capped read) beside a plain http.Client, both reusing
// connections. Compare their ns/op.
func BenchmarkFetch(b *testing.B) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html><body>a small page of a few hundred bytes, as a model would fetch it</body></html>")
	}))
	defer s.Close()
	url := s.URL + "/page?q=1"
	b.Run("plain", func(b *testing.B) {
		hc := &http.Client{}
		for b.Loop() {
			resp, err := hc.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("guarded", func(b *testing.B) {
		c := newClient(b, allowing(b, s, nil))
		for b.Loop() {
			if _, err := c.Fetch(b.Context(), url, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCheck measures judging a URL without fetching, as airlock
// check does.
func BenchmarkCheck(b *testing.B) {
	c := newClient(b, nil)
	for b.Loop() {
		if err := c.Check(b.Context(), "https://93.184.216.34/path?q=1"); err != nil {
			b.Fatal(err)
		}
	}
}
