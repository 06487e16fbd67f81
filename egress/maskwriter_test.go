package egress

import (
	"bytes"
	"strings"
	"testing"
)

// TestMaskWriterEveryCut: a value is masked wherever the stream is cut,
// and nothing else changes.
func TestMaskWriterEveryCut(t *testing.T) {
	values := []string{"s3cr3t-value-42", "other-token-xyz9"}
	in := "head s3cr3t-value-42 mid other-token-xyz9 s3cr3t-value-4 tail s3cr3t-value-42"
	want := strings.NewReplacer(values[0], Masked, values[1], Masked).Replace(in)
	for cut := 0; cut <= len(in); cut++ {
		for _, step := range []int{1, 3, len(in)} {
			var out bytes.Buffer
			m := newMaskWriter(&out, values)
			parts := []string{in[:cut], in[cut:]}
			for _, part := range parts {
				for i := 0; i < len(part); i += step {
					m.Write([]byte(part[i:min(i+step, len(part))]))
				}
			}
			m.Close()
			if out.String() != want {
				t.Fatalf("cut %d step %d:\n got %q\nwant %q", cut, step, out.String(), want)
			}
		}
	}
	var out bytes.Buffer
	m := newMaskWriter(&out, nil)
	m.Write([]byte("plain"))
	m.Close()
	if out.String() != "plain" {
		t.Fatalf("with nothing to mask: %q", out.String())
	}
}
