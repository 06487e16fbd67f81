package model_test

import (
	"context"
	"fmt"
	"time"

	"airlock.dev/airlock/model"
	"airlock.dev/airlock/model/modeltest"
)

// A primary that answers 503 and a fallback that works: the answer comes
// from the fallback, and the badge says so.
func ExampleChain() {
	down := modeltest.NewOpenAI(modeltest.Config{Faults: func(int) modeltest.Fault { return modeltest.Status(503) }})
	defer down.Close()
	up := modeltest.NewAnthropic(modeltest.Config{})
	defer up.Close()

	primary, _ := model.New(model.Spec{Provider: model.ProviderOpenAI, Model: "gpt-4o-mini", BaseURL: down.BaseURL()}, nil)
	backup, _ := model.New(model.Spec{Provider: model.ProviderAnthropic, Model: "claude-haiku-4-5", BaseURL: up.BaseURL()}, nil)
	primary.Name, backup.Name = "primary", "backup" // short names for the output
	chain, _ := model.NewChain([]model.Entry{primary, backup}, &model.Options{
		Policy: &model.Policy{Sleep: func(context.Context, time.Duration) error { return nil }}, // no real waits here
	})

	resp, err := chain.Complete(context.Background(), &model.Request{Messages: []model.Message{model.User("hello")}})
	if err != nil {
		return
	}
	fmt.Println(resp.Success, resp.Text)
	fmt.Println(resp.Badge.Model, resp.Badge.Attempts, resp.Badge.Fallbacks[0].From, resp.Badge.Fallbacks[0].Reason)
	// Output:
	// true ok
	// backup 5 primary server_error
}

func ExampleParseSpec() {
	s, err := model.ParseSpec("openai:llama3.2:3b@http://127.0.0.1:11434/v1")
	fmt.Println(s.Provider, s.Model, s.BaseURL, err)
	// Output: openai llama3.2:3b http://127.0.0.1:11434/v1 <nil>
}

func ExamplePriceTable_Cost() {
	prices := model.DefaultPrices()
	_ = prices.Set("my-local-model=0.10,0.20")
	cost, ok, _ := prices.Cost("gpt-4o-mini-2024-07-18", model.Usage{InputTokens: 12_000, OutputTokens: 800})
	fmt.Println(cost, ok)
	// Output: 0.00228 true
}
