package model_test

import (
	"context"
	"testing"

	"airlock.dev/airlock/model"
	"airlock.dev/airlock/model/modeltest"
)

// BenchmarkChainOverhead measures what the chain adds to one successful
// call: limits, breaker, attempt context, badge.
func BenchmarkChainOverhead(b *testing.B) {
	ok := clientFunc(func(context.Context, *model.Request) (*model.Response, error) {
		return &model.Response{Text: "ok"}, nil
	})
	c, err := model.NewChain([]model.Entry{{Name: "a", Client: ok}}, &model.Options{DefaultLimits: &model.Limits{Unlimited: true, MaxConcurrent: 64}})
	if err != nil {
		b.Fatal(err)
	}
	req := hello()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Complete(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenAIRoundTrip measures one call through the SDK to a local
// fake server, tool definition and tool call included.
func BenchmarkOpenAIRoundTrip(b *testing.B) {
	srv := modeltest.NewOpenAI(modeltest.Config{Reply: toolReply})
	defer srv.Close()
	e, err := model.New(model.Spec{Provider: model.ProviderOpenAI, Model: "m", BaseURL: srv.BaseURL()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := conversation()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Client.Complete(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnthropicRoundTrip is BenchmarkOpenAIRoundTrip for messages.
func BenchmarkAnthropicRoundTrip(b *testing.B) {
	srv := modeltest.NewAnthropic(modeltest.Config{Reply: toolReply})
	defer srv.Close()
	e, err := model.New(model.Spec{Provider: model.ProviderAnthropic, Model: "m", BaseURL: srv.BaseURL()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := conversation()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Client.Complete(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
