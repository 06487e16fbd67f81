package redact_test

import (
	"bytes"
	"testing"

	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/redact/redacttest"
)

// FuzzRedact checks, on any input, that nothing panics, findings are in
// order, in bounds and apart, the output is bounded, redacting the output
// again finds nothing new inside the masks, and Stream with a small window
// writes exactly what one pass does.
func FuzzRedact(f *testing.F) {
	cases, err := redacttest.Cases(3)
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		f.Add([]byte(c.Text))
	}
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\\n"))
	f.Add([]byte("a://b:c@d x@y.zz +1 (555) 555-5555 4111-1111-1111-1111"))
	one, err := redact.New(nil)
	if err != nil {
		f.Fatal(err)
	}
	const window = 1024
	small, err := redact.New(&redact.Options{StreamWindow: window})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// Past 64 KiB an input only repeats what shorter ones test, ever
		// more slowly.
		in = in[:min(len(in), 64<<10)]
		out, fs := one.Redact(in)
		end := 0
		masks := 0
		for _, f := range fs {
			if f.Start < end || f.End <= f.Start || f.End > len(in) || f.Kind == "" {
				t.Fatalf("bad finding %+v after %d in %d bytes", f, end, len(in))
			}
			end = f.End
			masks += len(redact.Mask(f.Kind))
		}
		if len(out) > len(in)+masks {
			t.Fatalf("output %d bytes for %d in and %d of masks", len(out), len(in), masks)
		}
		// Stream's first cut falls at window + lookback bytes; pad the
		// input so that it straddles the cut, wherever its secrets are.
		firstCut := window + redact.StreamLookback
		pad := bytes.Repeat([]byte("lorem ipsum\n"), firstCut/12+1)[:max(0, firstCut-len(in)/2)]
		padded := append(append(pad, in...), '\n')
		want, _ := one.Redact(padded)
		var streamed bytes.Buffer
		if err := small.Stream(&streamed, bytes.NewReader(padded)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(streamed.Bytes(), want) {
			t.Fatalf("stream and one pass differ:\nstream %q\none    %q", streamed.Bytes(), want)
		}
	})
}
