package redact_test

import (
	"bytes"
	"io"
	"testing"

	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/redact/redacttest"
)

// BenchmarkRedact measures one pass over an 8 MiB mixed corpus (code,
// prose, logs, one secret in about fifty lines); -benchmem and MB/s are
// the figures. bench/redactbench compares with gitleaks on 50 MB.
func BenchmarkRedact(b *testing.B) {
	text, _, err := redacttest.Corpus(8<<20, 1, 50)
	if err != nil {
		b.Fatal(err)
	}
	r, err := redact.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		r.Find(text)
	}
}

// BenchmarkStream is the same corpus through Stream.
func BenchmarkStream(b *testing.B) {
	text, _, err := redacttest.Corpus(8<<20, 1, 50)
	if err != nil {
		b.Fatal(err)
	}
	r, err := redact.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if err := r.Stream(io.Discard, bytes.NewReader(text)); err != nil {
			b.Fatal(err)
		}
	}
}
