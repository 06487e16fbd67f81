package audit

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzEntryJSON keeps appendEntry byte-for-byte equal to json.Marshal,
// which Verify and other readers of the log rely on.
func FuzzEntryJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "<a href=\"x\">&amp;</a>", "tab\tnl\nquote\"back\\",
		"\x00\x01\x1f\x7f", "\u2028\u2029", "caf\u00e9 \U0001F600", "\xff\xfe bad", "\b\f"} {
		f.Add(s, s+"!", int64(len(s)), 3)
	}
	f.Fuzz(func(t *testing.T, a, b string, micros int64, nStages int) {
		e := Entry{CallID: a, Session: b, Tool: a + b, Role: b, Mode: a, Decision: b, Code: a, Rule: b,
			ArgsBytes: int(micros), ArgsSHA256: a, ResultBytes: -int(micros), ResultSHA256: b, Note: a}
		for i := 0; i < nStages%12; i++ {
			st := Stage{Name: a, Decision: b, Micros: micros + int64(i)}
			if i%2 == 0 {
				st.Code = b
			}
			e.Stages = append(e.Stages, st)
		}
		if nStages%3 == 0 {
			e = Entry{Tool: a} // mostly empty: the omitempty paths
		}
		want, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendEntry(nil, &e); !bytes.Equal(got, want) {
			t.Fatalf("appendEntry:\n got %s\nwant %s", got, want)
		}
	})
}
