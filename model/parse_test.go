package model_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/model"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		in   string
		want model.Spec
	}{
		{"openai:gpt-4o-mini", model.Spec{Provider: "openai", Model: "gpt-4o-mini"}},
		{"anthropic:claude-haiku-4-5", model.Spec{Provider: "anthropic", Model: "claude-haiku-4-5"}},
		{"openai:llama3.2:3b@http://127.0.0.1:11434/v1", model.Spec{Provider: "openai", Model: "llama3.2:3b", BaseURL: "http://127.0.0.1:11434/v1"}},
		{"anthropic:claude@x@http://localhost:8080", model.Spec{Provider: "anthropic", Model: "claude@x", BaseURL: "http://localhost:8080"}},
		{"openai:org/model:v1@https://vllm.internal:8000/v1", model.Spec{Provider: "openai", Model: "org/model:v1", BaseURL: "https://vllm.internal:8000/v1"}},
	}
	for _, tt := range tests {
		got, err := model.ParseSpec(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if got.String() != tt.in {
			t.Errorf("String() = %q, want %q", got.String(), tt.in)
		}
	}
	bad := []string{
		"", "openai", "gpt-4o", ":gpt-4o", "google:gemini", "OpenAI:gpt-4o", "openai:", "openai:@http://h",
		"openai:gpt 4o", "openai:gpt\x00", "openai:m@", "openai:m@ftp://h", "openai:m@http://", "openai:m@127.0.0.1:80",
		"openai:m@http://h/v1?key=1", "openai:m@http://h/#x", "openai:m@http://h/v 1", "openai:\xff",
		"openai:" + strings.Repeat("m", model.MaxModelNameLen+1),
		"openai:m@http://h/" + strings.Repeat("a", model.MaxSpecLen),
	}
	for _, in := range bad {
		_, err := model.ParseSpec(in)
		var e *model.Error
		if !errors.As(err, &e) || e.Code != model.CodeInvalidRequest || e.Hint == "" {
			t.Errorf("ParseSpec(%q): got %v, want invalid_request with a hint", in, err)
		}
	}
}

func TestBaseURLOrDefault(t *testing.T) {
	for in, want := range map[string]string{
		"openai:m":             model.DefaultOpenAIBaseURL,
		"anthropic:m":          model.DefaultAnthropicBaseURL,
		"openai:m@http://h/v1": "http://h/v1",
	} {
		if got := model.MustParseSpec(in).BaseURLOrDefault(); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{}, 0, false},
		{http.Header{"Retry-After": {"5"}}, 5 * time.Second, true},
		{http.Header{"Retry-After": {" 0 "}}, 0, true},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second, true},
		{http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0, true},
		{http.Header{"Retry-After": {"Mon, 30 Nov 2026 09:00:00 GMT"}}, 0, true},
		{http.Header{"Retry-After": {"99999999999999999999999"}}, 24 * time.Hour, true},
		{http.Header{"Retry-After": {"-5"}}, 0, false},
		{http.Header{"Retry-After": {"1.5"}}, 0, false},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"12.5"}}, 12500 * time.Microsecond, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"bad"}, "Retry-After": {"9"}}, 9 * time.Second, true},
		{http.Header{"Retry-After-Ms": {"-1"}}, 0, false},
		{http.Header{"Retry-After-Ms": {"NaN"}}, 0, false},
		{http.Header{"Retry-After": {strings.Repeat("1", model.MaxRetryAfterHeader+1)}}, 0, false},
	}
	for _, tt := range tests {
		got, ok := model.ParseRetryAfter(tt.h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%v) = %s, %v; want %s, %v", tt.h, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPrices(t *testing.T) {
	table := model.DefaultPrices()
	tests := []struct {
		model string
		in    int64
		out   int64
		want  string
		ok    bool
	}{
		{"gpt-4o", 1_000_000, 1_000_000, "12.5", true},
		{"gpt-4o-2024-08-06", 1000, 0, "0.0025", true},
		{"gpt-4o-mini", 1, 1, "0.00000075", true},
		{"claude-sonnet-4-5-20250929", 2_000_000, 100_000, "7.5", true},
		{"claude-haiku-4-5-latest", 0, 0, "0", true},
		{"gpt-4o-mini-2024-07-18", 1_000_000, 0, "0.15", true},
		{"gpt-4o-turbo", 1, 1, "0", false},
		{"unknown", 1, 1, "0", false},
	}
	for _, tt := range tests {
		cost, ok, err := table.Cost(tt.model, model.Usage{InputTokens: tt.in, OutputTokens: tt.out})
		if err != nil || ok != tt.ok || cost.String() != tt.want {
			t.Errorf("Cost(%s, %d, %d) = %s, %v, %v; want %s, %v", tt.model, tt.in, tt.out, cost, ok, err, tt.want, tt.ok)
		}
	}
	if err := table.Set("llama3.2:3b=0.000001,1.5"); err != nil {
		t.Fatal(err)
	}
	if cost, ok, _ := table.Cost("llama3.2:3b", model.Usage{InputTokens: 3, OutputTokens: 2}); !ok || cost != 3_000_003 || cost.String() != "0.000003000003" {
		t.Errorf("override: got %d (%s), %v", cost, cost, ok)
	}
	if _, ok := model.DefaultPrices().Lookup("llama3.2:3b"); ok {
		t.Error("Set changed the built-in table")
	}
	for _, bad := range []string{"", "gpt-4o", "=1,2", "m=1", "m=1,", "m=,1", "m=1.,2", "m=-1,2", "m=1e3,2", "m=1.0000001,2",
		"m=1,2,3", "m=2000000,1", "m x=1,2", "m=0x1,2", strings.Repeat("m", model.MaxPriceOverride) + "=1,2"} {
		if err := table.Set(bad); !errors.Is(err, &model.Error{Code: model.CodeInvalidRequest}) {
			t.Errorf("Set(%q): got %v, want invalid_request", bad, err)
		}
	}
	if _, err := (model.Price{Input: 1 << 40}).Cost(model.Usage{InputTokens: 1 << 40}); err == nil {
		t.Error("an overflowing cost was not refused")
	}
	if _, err := (model.Price{}).Cost(model.Usage{InputTokens: -1}); err == nil {
		t.Error("negative tokens were not refused")
	}
}

func TestAPIKeyMasks(t *testing.T) {
	k := model.NewAPIKey(testKey)
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "key", k)
	js, _ := json.Marshal(struct{ K model.APIKey }{k})
	outs := []string{
		k.String(), fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s %q %x", k, k, k, k, k, k),
		fmt.Sprintf("%v", model.ClientOptions{APIKey: k}), fmt.Sprintf("%+v", &model.ClientOptions{APIKey: k}),
		logged.String(), string(js),
	}
	for _, s := range outs {
		if strings.Contains(s, testKey) || strings.Contains(s, "0123456789") {
			t.Errorf("the key shows in %q", s)
		}
		if !strings.Contains(s, "REDACTED") {
			t.Errorf("no mask in %q", s)
		}
	}
	if model.NewAPIKey("").String() == "[REDACTED]" || model.NewAPIKey("").IsSet() {
		t.Error("an empty key should read as unset")
	}
}

func TestErrorJSON(t *testing.T) {
	e := &model.Error{Code: model.CodeRateLimited, Message: "m", Hint: "h", RetryAfter: 1500 * time.Millisecond, Status: 429}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"code":"rate_limited","message":"m","hint":"h","status":429,"retry_after_ms":1500}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
