package store_test

import (
	"strings"
	"testing"

	"airlock.dev/airlock/store"
	"airlock.dev/airlock/untrusted"
)

// TestObservationLimitsMatchUntrusted: the store keeps every value package
// untrusted extracts, and names the user as it does.
func TestObservationLimitsMatchUntrusted(t *testing.T) {
	if store.MaxObservationValue != untrusted.MaxValueBytes {
		t.Errorf("store.MaxObservationValue = %d, untrusted.MaxValueBytes = %d", store.MaxObservationValue, untrusted.MaxValueBytes)
	}
	if store.SourceUser != untrusted.SourceUser {
		t.Errorf("store.SourceUser = %q, untrusted.SourceUser = %q", store.SourceUser, untrusted.SourceUser)
	}
	if store.MaxObservations < untrusted.DefaultMaxValues+untrusted.DefaultMaxUserValues {
		t.Errorf("store.MaxObservations = %d keeps less than untrusted's defaults, %d + %d",
			store.MaxObservations, untrusted.DefaultMaxValues, untrusted.DefaultMaxUserValues)
	}
}

func TestValidObservations(t *testing.T) {
	obs := func(n int, o store.Observation) []store.Observation {
		list := make([]store.Observation, n)
		for i := range list {
			list[i] = o
		}
		return list
	}
	ok := store.Observation{Source: "tool:fetch", Value: "https://example.com/x"}
	for _, tc := range []struct {
		name  string
		obs   []store.Observation
		limit string // "" when valid; else the constant the error names
	}{
		{"none", nil, ""},
		{"one", obs(1, ok), ""},
		{"a full batch", obs(store.MaxObserveBatch, ok), ""},
		{"longest value and source", obs(1, store.Observation{Source: strings.Repeat("s", store.MaxObservationSource), Value: strings.Repeat("v", store.MaxObservationValue)}), ""},
		{"any bytes", obs(1, store.Observation{Source: "file:\xff", Value: "\x00\xfe"}), ""},
		{"a batch too many", obs(store.MaxObserveBatch+1, ok), "store.MaxObserveBatch"},
		{"empty value", obs(1, store.Observation{Source: "web"}), "store.MaxObservationValue"},
		{"long value", obs(1, store.Observation{Source: "web", Value: strings.Repeat("v", store.MaxObservationValue+1)}), "store.MaxObservationValue"},
		{"empty source", obs(1, store.Observation{Value: "v"}), "store.MaxObservationSource"},
		{"long source", obs(1, store.Observation{Source: strings.Repeat("s", store.MaxObservationSource+1), Value: "v"}), "store.MaxObservationSource"},
	} {
		err := store.ValidObservations(tc.obs)
		switch {
		case tc.limit == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.limit != "" && (err == nil || !strings.Contains(err.Error(), tc.limit)):
			t.Errorf("%s: err = %v, want one naming %s", tc.name, err, tc.limit)
		}
	}
}
