package schema

import (
	"encoding/json"
	"testing"
)

// BenchmarkValidate measures decoding and validating a typical small
// arguments object, valid and with violations.
func BenchmarkValidate(b *testing.B) {
	s, err := Compile("read_file", json.RawMessage(toolSchema), nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, args string }{
		{"valid", `{"path":"src/main.go","limit":200,"mode":"text","tags":["go","main"],"opts":{"follow":false}}`},
		{"invalid", `{"path":"../main.go","limit":0,"mode":"lines","tags":["go","main"],"extra":true}`},
	} {
		args := json.RawMessage(bc.args)
		valid := s.Validate(args) == nil
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(args)))
			for b.Loop() {
				if (s.Validate(args) == nil) != valid {
					b.Fatal("outcome changed")
				}
			}
		})
	}
}
