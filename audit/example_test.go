package audit_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"airlock.dev/airlock/audit"
)

func Example() {
	dir, err := os.MkdirTemp("", "audit-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "audit.jsonl")

	l, err := audit.Open(path, nil) // group commit, 2ms window
	if err != nil {
		panic(err)
	}
	for _, decision := range []string{audit.DecisionAllow, audit.DecisionDeny} {
		rec, err := l.Append(audit.Entry{
			CallID: "c-" + decision, Tool: "run_command", Role: "operator", Decision: decision,
			Stages: []audit.Stage{{Name: "authorize", Decision: decision, Micros: 4}},
		})
		if err != nil {
			panic(err)
		}
		fmt.Println(rec.Seq, rec.Entry.Decision)
	}
	if err := l.Close(); err != nil {
		panic(err)
	}

	rep, err := audit.Verify(path)
	if err != nil {
		panic(err)
	}
	fmt.Println("ok:", rep.OK, "records:", rep.Records)

	// Someone turns the denial into an allowance.
	data, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(data), `"deny"`, `"allow"`, 1)), 0o600)
	rep, _ = audit.Verify(path)
	fmt.Println("ok:", rep.OK)
	fmt.Println(rep.Problems[0])
	// Output:
	// 1 allow
	// 2 deny
	// ok: true records: 2
	// ok: false
	// line 2 (seq 2): edited: the record's content does not match its hash
}
