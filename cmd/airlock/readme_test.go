package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeExample is one "$ command" of a sh block in README.md, with the
// output the README shows under it.
type readmeExample struct {
	line    int      // 1-based line of the command in README.md
	command string   // the shell command line, without "$ "
	output  []string // the lines shown under it, up to the next command
}

// readmeUnrun names the README examples this test does not run, each with
// the reason. An example missing from both this table and the run fails
// the test, and so does an entry here that no longer names an example, so
// the README cannot gain an untested example unnoticed.
var readmeUnrun = map[string]string{
	`airlock diff --approval ID     # what approving applies`:                                                                       "the approval's id is random; testdata/script/review.txtar runs this flow with the id airlock approvals --json gives",
	`airlock approve ID             # applies them now, under session s2; airlock deny ID discards them`:                            "the approval's id is random; testdata/script/review.txtar runs this flow with the id airlock approvals --json gives",
	`airlock call --mode auto-edit run_command '{"command":"go test ./..."}'`:                                                       "needs a Go module and toolchain inside the sandbox; run_command itself runs in testdata/script/run_command.txtar",
	`airlock gateway accept --hash 3f9a0c1b2d4e everything__echo`:                                                                   "needs a pin that a gateway made of a changed upstream tool; e2e/gateway_test.go accepts one, by the hash airlock gateway pins --json gives",
	`airlock fetch --json https://example.com/`:                                                                                     "reaches the internet, which tests here never do; fetch runs against loopback servers in testdata/script/fetch.txtar",
	`airlock run --mode auto-edit --model openai:gpt-4o-mini --model anthropic:claude-haiku-4-5 "Sum the totals in invoices/*.csv"`: "needs the providers' model services; e2e/aimock/run_test.go runs airlock run against a scripted server of both wire formats",
	`airlock run --json --budget-usd 0.50 --max-steps 10 --model openai:llama3.2@http://127.0.0.1:11434/v1 "..."`:                   "needs a model server; e2e/aimock/run_test.go runs airlock run --json against a scripted one",
}

// readmeExamples reads every "$ " line of the README's sh blocks.
func readmeExamples(t *testing.T, path string) [][]readmeExample {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks [][]readmeExample
	var cur []readmeExample
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			if in && len(cur) > 0 {
				blocks = append(blocks, cur)
			}
			in, cur = !in && strings.TrimPrefix(line, "```") == "sh", nil
		case !in:
		case strings.HasPrefix(line, "$ "):
			cur = append(cur, readmeExample{line: n, command: strings.TrimPrefix(line, "$ ")})
		case len(cur) > 0:
			last := &cur[len(cur)-1]
			last.output = append(last.output, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// outputPattern turns the output the README shows into a regular
// expression: "..." alone on a line stands for any lines, and within a
// line for any text of that line.
func outputPattern(lines []string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^`)
	for _, l := range lines {
		if strings.TrimSpace(l) == "..." {
			b.WriteString(`(?:[^\n]*\n)*?`)
			continue
		}
		parts := strings.Split(l, "...")
		for i, p := range parts {
			if i > 0 {
				b.WriteString(`[^\n]*?`)
			}
			b.WriteString(regexp.QuoteMeta(p))
		}
		b.WriteString(`\n`)
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

// TestReadmeExamples runs the README's examples with the airlock this
// test builds, each sh block in a fresh workspace of its own, and checks
// that every output the README shows is what airlock prints (stdout and
// stderr together). An example shown without output must succeed.
func TestReadmeExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds airlock")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin, "airlock.dev/airlock/cmd/airlock", "airlock.dev/airlock/cmd/airlock-sandbox-init")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, block := range readmeExamples(t, "../../README.md") {
		work, home := t.TempDir(), t.TempDir()
		env := []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", "HOME=" + home,
			"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "LANG=C.UTF-8"}
		for _, ex := range block {
			seen[ex.command] = true
			if why, ok := readmeUnrun[ex.command]; ok {
				t.Logf("README.md:%d not run: %s", ex.line, why)
				continue
			}
			cmd := exec.Command("/bin/sh", "-c", ex.command)
			cmd.Dir, cmd.Env = work, env
			out, err := cmd.CombinedOutput()
			out = bytes.ReplaceAll(out, []byte("\r\n"), []byte("\n")) // HTTP heads, as a terminal shows them
			if len(ex.output) == 0 {
				if err != nil {
					t.Errorf("README.md:%d: %s\nfailed (%v), and the README shows no output:\n%s", ex.line, ex.command, err, out)
				}
				continue
			}
			if !outputPattern(ex.output).Match(out) {
				t.Errorf("README.md:%d: %s\nprints:\n%s\nthe README shows:\n%s", ex.line, ex.command, out, strings.Join(ex.output, "\n"))
			}
		}
	}
	for command := range readmeUnrun {
		if !seen[command] {
			t.Errorf("readmeUnrun names %q, which is no longer an example in README.md", command)
		}
	}
}
