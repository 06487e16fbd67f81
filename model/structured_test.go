package model_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"airlock.dev/airlock/model"
	"airlock.dev/airlock/model/modeltest"
	"airlock.dev/airlock/schema"
)

func citySchema(t *testing.T) *schema.Schema {
	t.Helper()
	s, err := schema.Compile("city", json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":50}},"required":["city"],"additionalProperties":false}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// answers replies with texts[n], the last one repeated.
func answers(texts ...string) func(int, []byte) modeltest.Reply {
	return func(n int, _ []byte) modeltest.Reply {
		return modeltest.Reply{Text: texts[min(n, len(texts)-1)], InputTokens: 10, OutputTokens: 2}
	}
}

func TestCompleteJSONRepairs(t *testing.T) {
	srv := modeltest.NewOpenAI(modeltest.Config{Reply: answers("Sure!\n```json\n{\"city\": 5}\n```", `Here: {"city":"Paris"} done`)})
	defer srv.Close()
	c := newChain(t, nil, entryFor(t, model.ProviderOpenAI, srv, "m"))
	resp, raw, err := model.CompleteJSON(context.Background(), c, hello(), citySchema(t), nil)
	if err != nil || !resp.Success {
		t.Fatalf("got %+v, %v", resp, err)
	}
	if string(raw) != `{"city":"Paris"}` {
		t.Errorf("got %s", raw)
	}
	if srv.Count() != 2 || resp.Usage != (model.Usage{InputTokens: 20, OutputTokens: 4}) || resp.Badge.Attempts != 2 {
		t.Errorf("%d requests, usage %+v; want 2 and the sum of both", srv.Count(), resp.Usage)
	}
	first, _ := srv.Request(0)
	if !strings.Contains(string(first), `maxLength`) {
		t.Errorf("the first request does not show the schema: %s", first)
	}
	second, _ := srv.Request(1)
	var sent struct {
		Messages []struct{ Role, Content string }
	}
	json.Unmarshal(second, &sent)
	last := sent.Messages[len(sent.Messages)-1]
	prev := sent.Messages[len(sent.Messages)-2]
	if last.Role != "user" || !strings.Contains(last.Content, "/city") || prev.Role != "assistant" || !strings.Contains(prev.Content, `"city": 5`) {
		t.Errorf("the repair round sent %+v then %+v", prev, last)
	}
}

func TestCompleteJSONGivesUp(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts *model.StructuredOptions
		want int
	}{
		{"default", nil, 1 + model.DefaultMaxRepairs},
		{"one", &model.StructuredOptions{MaxRepairs: 1}, 2},
		{"none", &model.StructuredOptions{NoRepairs: true}, 1},
		{"capped", &model.StructuredOptions{MaxRepairs: 1000}, 1 + model.MaxRepairs},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := modeltest.NewAnthropic(modeltest.Config{Reply: answers(`{"town":"Paris"}`)})
			defer srv.Close()
			c := newChain(t, &model.Options{DefaultLimits: &model.Limits{Unlimited: true}}, entryFor(t, model.ProviderAnthropic, srv, "m"))
			resp, raw, err := model.CompleteJSON(context.Background(), c, hello(), citySchema(t), tt.opts)
			if err != nil || resp.Success || raw != nil || resp.Reason.Code != model.CodeInvalidOutput || resp.Text != model.DefaultDegradedText {
				t.Fatalf("got %+v, %s, %v", resp, raw, err)
			}
			if srv.Count() != tt.want {
				t.Errorf("%d requests, want %d", srv.Count(), tt.want)
			}
		})
	}
}

func TestCompleteJSONPassesDegradation(t *testing.T) {
	srv := modeltest.NewOpenAI(modeltest.Config{Faults: func(int) modeltest.Fault { return modeltest.Status(401) }})
	defer srv.Close()
	c := newChain(t, nil, entryFor(t, model.ProviderOpenAI, srv, "m"))
	resp, raw, err := model.CompleteJSON(context.Background(), c, hello(), citySchema(t), nil)
	if err != nil || resp.Success || raw != nil || resp.Reason.Code != model.CodeAllModelsFailed || srv.Count() != 1 {
		t.Errorf("got %+v, %s, %v after %d requests", resp, raw, err, srv.Count())
	}
}
