package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// forge makes the line of a record with a correctly computed hash: what a
// forger who knows the format can write.
func forge(t testing.TB, seq uint64, prev string, e Entry) string {
	t.Helper()
	entry, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	line, _, err := encodeRecord(nil, seq, clock()(), prev, entry)
	if err != nil {
		t.Fatal(err)
	}
	return string(line)
}

// TestVerifyTampering tampers with a log of six records (lines 1 to 6,
// seq 1 to 6) in each way, and checks the first problem Verify names: a
// log of one writer, and one of three that took turns.
func TestVerifyTampering(t *testing.T) {
	type lines = []string
	const otherHash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		name   string
		tamper func(t *testing.T, path string, l lines, recs []Record) lines
		// the first problem, and how many problems in all (0: any number)
		kind  string
		line  int
		seq   uint64
		count int
	}{
		{"edit a field of a middle record", func(t *testing.T, _ string, l lines, _ []Record) lines {
			l[2] = strings.Replace(l[2], `"decision":"allow"`, `"decision":"deny"`, 1)
			return l
		}, KindEdited, 3, 3, 1},
		{"edit the first record", func(t *testing.T, _ string, l lines, _ []Record) lines {
			l[0] = strings.Replace(l[0], `"args_bytes":20`, `"args_bytes":21`, 1)
			return l
		}, KindEdited, 1, 1, 1},
		{"edit a record's hash", func(t *testing.T, _ string, l lines, recs []Record) lines {
			l[2] = strings.Replace(l[2], recs[2].Hash, otherHash, 1)
			return l
		}, KindEdited, 3, 3, 1},
		{"edit a record's seq", func(t *testing.T, _ string, l lines, _ []Record) lines {
			l[2] = strings.Replace(l[2], `{"seq":3,`, `{"seq":30,`, 1)
			return l
		}, KindEdited, 3, 30, 1},
		{"rewrite a record with its hash recomputed", func(t *testing.T, _ string, l lines, recs []Record) lines {
			e := recs[2].Entry
			e.Decision = DecisionDeny
			l[2] = forge(t, 3, recs[1].Hash, e)
			return l
		}, KindEdited, 3, 3, 1},
		{"rewrite the last record with its hash recomputed", func(t *testing.T, _ string, l lines, recs []Record) lines {
			e := recs[5].Entry
			e.Decision = DecisionDeny
			l[5] = forge(t, 6, recs[4].Hash, e)
			return l
		}, KindEdited, 6, 6, 1},
		{"delete a middle record", func(t *testing.T, _ string, l lines, _ []Record) lines {
			return append(l[:3:3], l[4:]...)
		}, KindDeleted, 4, 4, 1},
		{"delete two middle records", func(t *testing.T, _ string, l lines, _ []Record) lines {
			return append(l[:2:2], l[4:]...)
		}, KindDeleted, 3, 3, 1},
		{"delete the first record", func(t *testing.T, _ string, l lines, _ []Record) lines {
			return l[1:]
		}, KindDeleted, 1, 1, 1},
		{"insert a forged record", func(t *testing.T, _ string, l lines, _ []Record) lines {
			forged := strings.Replace(l[2], `"tool":"calculate"`, `"tool":"run_command"`, 1)
			return append(l[:3:3], append(lines{forged}, l[3:]...)...)
		}, KindInserted, 4, 3, 1},
		{"insert a forged record with its hash recomputed, prev broken", func(t *testing.T, _ string, l lines, _ []Record) lines {
			forged := forge(t, 4, otherHash, entry(40))
			return append(l[:3:3], append(lines{forged}, l[3:]...)...)
		}, KindInserted, 4, 4, 1},
		{"insert a forged record with its hash recomputed, prev linked", func(t *testing.T, _ string, l lines, recs []Record) lines {
			forged := forge(t, 4, recs[2].Hash, entry(40))
			return append(l[:3:3], append(lines{forged}, l[3:]...)...)
		}, KindInserted, 4, 4, 1},
		{"insert a forged record at the end", func(t *testing.T, _ string, l lines, recs []Record) lines {
			return append(l, forge(t, 7, recs[4].Hash, entry(40)))
		}, KindInserted, 7, 7, 1},
		{"insert a copy of a record", func(t *testing.T, _ string, l lines, _ []Record) lines {
			return append(l[:5:5], append(lines{l[1]}, l[5:]...)...)
		}, KindInserted, 6, 2, 1},
		{"swap two records", func(t *testing.T, _ string, l lines, _ []Record) lines {
			l[2], l[3] = l[3], l[2]
			return l
		}, KindReordered, 3, 4, 1},
		{"move a record later", func(t *testing.T, _ string, l lines, _ []Record) lines {
			return lines{l[0], l[2], l[3], l[4], l[1], l[5]}
		}, KindReordered, 2, 3, 1},
		{"move a record earlier", func(t *testing.T, _ string, l lines, _ []Record) lines {
			return lines{l[0], l[4], l[1], l[2], l[3], l[5]}
		}, KindReordered, 2, 5, 1},
		{"swap the first and last records", func(t *testing.T, _ string, l lines, _ []Record) lines {
			l[0], l[5] = l[5], l[0]
			return l
		}, KindReordered, 1, 6, 0},
		{"truncate the tail", func(t *testing.T, _ string, l lines, _ []Record) lines {
			return l[:4]
		}, KindTruncated, 5, 5, 1},
		{"truncate everything", func(t *testing.T, _ string, l lines, _ []Record) lines {
			return nil
		}, KindTruncated, 1, 1, 1},
		{"delete the head file", func(t *testing.T, path string, l lines, _ []Record) lines {
			if err := os.Remove(HeadPath(path)); err != nil {
				t.Fatal(err)
			}
			return l
		}, KindDeleted, 0, 0, 1},
		{"head file garbage", func(t *testing.T, path string, l lines, _ []Record) lines {
			os.WriteFile(HeadPath(path), []byte(`{"seq":6}`+"\n"), 0o600)
			return l
		}, KindMalformed, 0, 0, 1},
		{"head names another hash", func(t *testing.T, path string, l lines, recs []Record) lines {
			writeHead(HeadPath(path), head{Seq: 5, Hash: recs[3].Hash})
			return l
		}, KindEdited, 5, 5, 1},
		{"garbage line", func(t *testing.T, _ string, l lines, _ []Record) lines {
			return append(l[:2:2], append(lines{"this is not JSON\n"}, l[2:]...)...)
		}, KindMalformed, 3, 0, 1},
		{"empty line", func(t *testing.T, _ string, l lines, _ []Record) lines {
			return append(l[:2:2], append(lines{"\n"}, l[2:]...)...)
		}, KindMalformed, 3, 0, 1},
		{"a member missing", func(t *testing.T, _ string, l lines, _ []Record) lines {
			l[1] = `{"seq":2,"prev":"","entry":{}}` + "\n"
			return l
		}, KindMalformed, 2, 0, 0},
		{"an unknown member", func(t *testing.T, _ string, l lines, _ []Record) lines {
			l[1] = strings.Replace(l[1], `"tool":`, `"extra":1,"tool":`, 1)
			return l
		}, KindMalformed, 2, 0, 0},
		{"spacing changed, content the same", func(t *testing.T, _ string, l lines, _ []Record) lines {
			l[1] = strings.Replace(l[1], `"seq":2`, `"seq": 2`, 1)
			return l
		}, KindMalformed, 2, 0, 0},
		{"a duplicated member", func(t *testing.T, _ string, l lines, _ []Record) lines {
			l[1] = strings.Replace(l[1], `"seq":2`, `"seq":9,"seq":2`, 1)
			return l
		}, KindMalformed, 2, 0, 0},
		{"last line cut short", func(t *testing.T, _ string, l lines, _ []Record) lines {
			l[5] = l[5][:len(l[5])-10]
			return l
		}, KindMalformed, 6, 0, 2}, // and then truncated
		{"a line over MaxRecordBytes", func(t *testing.T, _ string, l lines, _ []Record) lines {
			return append(l[:2:2], append(lines{strings.Repeat("x", MaxRecordBytes+1) + "\n"}, l[2:]...)...)
		}, KindMalformed, 3, 0, 1},
	}
	for _, tt := range tests {
		for _, writers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/writers=%d", tt.name, writers), func(t *testing.T) {
				path, recs := writeLogBy(t, writers, 6, nil)
				if rep := mustVerify(t, path); !rep.OK || rep.Records != 6 || rep.PastHead != 0 {
					t.Fatalf("Verify before tampering: %+v", rep)
				}
				writeLines(t, path, tt.tamper(t, path, readLines(t, path), recs))
				rep := mustVerify(t, path)
				if rep.OK || len(rep.Problems) == 0 {
					t.Fatalf("Verify: got OK, want a problem: %+v", rep)
				}
				got, want := rep.Problems[0], Problem{Kind: tt.kind, Line: tt.line, Seq: tt.seq}
				if got.Kind != want.Kind || got.Line != want.Line || got.Seq != want.Seq || got.Message == "" {
					t.Errorf("first problem: got %v, want %s at line %d seq %d", got, want.Kind, want.Line, want.Seq)
				}
				if tt.count > 0 && len(rep.Problems) != tt.count {
					t.Errorf("got %d problems, want %d:", len(rep.Problems), tt.count)
				}
				if t.Failed() {
					for _, p := range rep.Problems {
						t.Log(p)
					}
				}
			})
		}
	}
}

// TestVerifyPastHead: records after the one the head file names are a
// valid chain, counted apart.
func TestVerifyPastHead(t *testing.T) {
	path, recs := writeLog(t, 6, nil)
	if err := writeHead(HeadPath(path), head{Seq: 2, Hash: recs[1].Hash}); err != nil {
		t.Fatal(err)
	}
	rep := mustVerify(t, path)
	if got, want := rep, (Report{Records: 6, Seq: 6, Head: recs[5].Hash, PastHead: 4, OK: true}); got.OK != want.OK ||
		got.Records != want.Records || got.Seq != want.Seq || got.Head != want.Head || got.PastHead != want.PastHead {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestVerifyEmpty(t *testing.T) {
	path, _ := writeLog(t, 0, nil)
	if rep := mustVerify(t, path); !rep.OK || rep.Records != 0 || rep.Head != "" {
		t.Errorf("new log: got %+v, want OK and empty", rep)
	}
	if _, err := Verify(path + ".missing"); err == nil {
		t.Error("Verify of a missing log: got no error")
	}
}

// TestVerifyManyProblems: a log of garbage lists MaxProblems problems and
// counts the rest.
func TestVerifyManyProblems(t *testing.T) {
	path, _ := writeLog(t, 0, nil)
	writeLines(t, path, []string{strings.Repeat("garbage\n", MaxProblems+5)})
	rep := mustVerify(t, path)
	if got, want := len(rep.Problems), MaxProblems; got != want {
		t.Errorf("problems listed: got %d, want %d", got, want)
	}
	if got, want := rep.MoreProblems, 5; got != want {
		t.Errorf("MoreProblems: got %d, want %d", got, want)
	}
}
