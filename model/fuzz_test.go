package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"airlock.dev/airlock/model"
)

// FuzzParseSpec: ParseSpec never panics, and what it accepts writes back
// to the same text and parses again to the same spec.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"openai:gpt-4o-mini", "anthropic:claude-haiku-4-5", "openai:llama3.2:3b@http://127.0.0.1:11434/v1",
		"anthropic:a@b@http://h:1", "openai:m@http://[::1]:8080/v1", "openai:m@https://h/v1?x", ":", "@", "openai:@",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := model.ParseSpec(s)
		if err != nil {
			return
		}
		if sp.String() != s {
			t.Fatalf("ParseSpec(%q).String() = %q", s, sp.String())
		}
		again, err := model.ParseSpec(sp.String())
		if err != nil || again != sp {
			t.Fatalf("round trip of %q: %+v, %v", s, again, err)
		}
		if sp.Model == "" || (sp.Provider != model.ProviderOpenAI && sp.Provider != model.ProviderAnthropic) {
			t.Fatalf("accepted %q as %+v", s, sp)
		}
	})
}

// FuzzParseRetryAfter: never panics, and a parsed wait is never negative
// nor past a day, whatever the headers say.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"5", "0", "-1", "1.5", "Mon, 01 Dec 2026 09:00:30 GMT", "Monday, 01-Dec-26 09:00:30 GMT", "Mon Dec  1 09:00:30 2026", "99999999999999999999", ""} {
		f.Add(s, "")
		f.Add("", s)
	}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ra, ms string) {
		h := http.Header{}
		if ra != "" {
			h.Set("Retry-After", ra)
		}
		if ms != "" {
			h.Set("Retry-After-Ms", ms)
		}
		d, ok := model.ParseRetryAfter(h, now)
		if d < 0 || d > 24*time.Hour || (!ok && d != 0) {
			t.Fatalf("Retry-After %q, retry-after-ms %q: %s, %v", ra, ms, d, ok)
		}
	})
}

// FuzzParsePriceOverride: never panics; an accepted price is not
// negative and costs a million tokens without overflow.
func FuzzParsePriceOverride(f *testing.F) {
	for _, s := range []string{"gpt-4o=2.50,10", "m=0,0", "m=.5,1.", "m=1000000,1000000", "a=b=1,2", "m=1,2,3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, p, err := model.ParsePriceOverride(s)
		if err != nil {
			return
		}
		if name == "" || p.Input < 0 || p.Output < 0 {
			t.Fatalf("accepted %q as %q %+v", s, name, p)
		}
		if _, err := p.Cost(model.Usage{InputTokens: 1e6, OutputTokens: 1e6}); err != nil {
			t.Fatalf("%q: a million tokens overflow: %v", s, err)
		}
	})
}

// FuzzProviderResponse feeds arbitrary 200 bodies through each SDK to the
// conversion into a Response: whatever a server sends, Complete returns a
// Response or a *model.Error, and never panics.
func FuzzProviderResponse(f *testing.F) {
	f.Add([]byte(`{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`), false)
	f.Add([]byte(`{"id":"c","choices":[]}`), false)
	f.Add([]byte(`{"choices":[{"message":{"tool_calls":[null,{"type":"custom"}]}}]}`), false)
	f.Add([]byte(`{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"f","input":{"a":1}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}`), true)
	f.Add([]byte(`{"content":[{"type":"tool_use","input":"not an object"},null]}`), true)
	f.Add([]byte(`[]`), true)
	var body atomic.Pointer[[]byte]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(*body.Load())
	}))
	defer srv.Close()
	clients := map[bool]model.Client{}
	for _, anth := range []bool{false, true} {
		spec := model.Spec{Provider: model.ProviderOpenAI, Model: "m", BaseURL: srv.URL + "/v1"}
		if anth {
			spec = model.Spec{Provider: model.ProviderAnthropic, Model: "m", BaseURL: srv.URL}
		}
		e, err := model.New(spec, nil)
		if err != nil {
			f.Fatal(err)
		}
		clients[anth] = e.Client
	}
	req := &model.Request{Messages: []model.Message{model.User("x")}}
	f.Fuzz(func(t *testing.T, b []byte, anth bool) {
		body.Store(&b)
		resp, err := clients[anth].Complete(context.Background(), req)
		var e *model.Error
		switch {
		case err != nil && !errors.As(err, &e):
			t.Fatalf("got %T %v, want a *model.Error", err, err)
		case err == nil && resp == nil:
			t.Fatal("no response and no error")
		case err == nil:
			if _, merr := json.Marshal(resp); merr != nil {
				t.Fatalf("the response does not marshal: %v", merr)
			}
		}
	})
}
