// Command redactbench compares airlock's redact package with gitleaks v8's
// detector on the same generated corpus: throughput in MB/s, and recall per
// kind and per category over the secrets planted in it. Given -clean, it
// also counts what each engine finds in real code and documentation, where
// every finding is a false positive. Run it from the bench directory:
//
//	go run ./redactbench [-size 50] [-seed 1] [-every 50] [-rounds 3] [-gitleaks-rounds 1] [-chunk 1] \
//	    [-clean "$(go env GOROOT)/src,$(go env GOROOT)/doc"] [-clean-size 20] [-show-clean] [-gitleaks=false]
//
// The corpus (code, prose, logs, the labelled set's hard negatives, and one
// labelled positive in about every -every lines) is generated from -seed by
// airlock.dev/airlock/redact/redacttest, so every run sees the same bytes.
// Both engines are used in-process, one goroutine each, on the same
// line-aligned chunks of -chunk MiB (gitleaks through DetectBytes, its
// default config; airlock through Redactor.Find); airlock's Stream over the
// whole corpus is timed too. airlock runs -rounds times, gitleaks
// -gitleaks-rounds times, and the median wall time and median process CPU
// time of each are reported (CPU time is the steadier figure on a shared
// machine). A secret counts as found by gitleaks when one of its findings
// on the secret's lines (or starting one line before, where a label is)
// has a Secret or Match that contains the planted value or lies inside it;
// a finding that spans many more lines than the secret does not count (its
// private-key rule can run from one "BEGIN" marker to a key 170 lines on).
// Before 2026-12 the harness credited any finding in the same 1 MiB chunk,
// which overstated gitleaks on values that repeat verbatim (test cards).
//
// The clean corpus is made of the files under the -clean roots (source and
// documentation by extension; test files and testdata, vendor and
// node_modules directories left out, since they hold deliberate fake
// secrets), in an order shuffled by -seed, up to -clean-size MB. Both
// engines run on it in the same chunks; -show-clean prints each finding's
// line so that a person can judge it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"

	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/redact/redacttest"
)

func main() {
	size := flag.Int("size", 50, "corpus size in MB (10^6 bytes)")
	seed := flag.Uint64("seed", 1, "corpus seed")
	every := flag.Int("every", 50, "one planted secret in about this many lines")
	rounds := flag.Int("rounds", 3, "timed rounds of airlock; the median is reported")
	glRounds := flag.Int("gitleaks-rounds", 1, "timed rounds of gitleaks (slow: about a second per MB)")
	chunkMiB := flag.Int("chunk", 1, "chunk size in MiB handed to each engine")
	clean := flag.String("clean", "", "comma-separated `roots` of real code and docs for the false-positive count")
	cleanSize := flag.Int("clean-size", 20, "clean corpus size in MB (10^6 bytes)")
	showClean := flag.Bool("show-clean", false, "print every finding in the clean corpus with its line")
	withGitleaks := flag.Bool("gitleaks", true, "run gitleaks too (false: airlock alone, for quick runs)")
	flag.Parse()
	if *size < 1 || *rounds < 1 || *glRounds < 1 || *chunkMiB < 1 || *every < 2 {
		fatal(fmt.Errorf("-size, -rounds and -chunk must be at least 1, -every at least 2"))
	}
	logging.Logger = zerolog.New(io.Discard)

	text, planted, err := redacttest.Corpus(*size*1_000_000, *seed, *every)
	if err != nil {
		fatal(err)
	}
	chunks := split(text, *chunkMiB<<20)
	fmt.Printf("corpus: %d bytes, %d chunks, %d planted secrets, seed %d; %s, GOMAXPROCS %d\n",
		len(text), len(chunks), len(planted), *seed, runtime.GOARCH, runtime.GOMAXPROCS(0))

	rd, err := redact.New(nil)
	if err != nil {
		fatal(err)
	}
	gl, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		fatal(err)
	}

	var airFound [][]redact.Finding
	airTime := timeRounds(*rounds, func() {
		airFound = airFound[:0]
		for _, c := range chunks {
			airFound = append(airFound, rd.Find(c.text))
		}
	})
	streamTime := timeRounds(*rounds, func() {
		if err := rd.Stream(io.Discard, bytes.NewReader(text)); err != nil {
			fatal(err)
		}
	})
	var glFound [][]glHit
	glTime := timing{}
	if *withGitleaks {
		glTime = timeRounds(*glRounds, func() {
			glFound = glFound[:0]
			for _, c := range chunks {
				var hits []glHit
				for _, f := range gl.DetectBytes(c.text) {
					hits = append(hits, glHit{[]string{f.Secret, f.Match}, f.StartLine, f.EndLine})
				}
				glFound = append(glFound, hits)
			}
		})
	} else {
		glFound = make([][]glHit, len(chunks))
	}

	mb := float64(len(text)) / 1e6
	fmt.Printf("\n%-28s %10s %10s %10s %12s\n", "engine", "wall s", "MB/s", "CPU s", "MB/CPU-s")
	for _, e := range []struct {
		name string
		t    timing
	}{{"airlock redact (Find)", airTime}, {"airlock redact (Stream)", streamTime}, {"gitleaks v8 (DetectBytes)", glTime}} {
		if e.t.wall == 0 {
			continue
		}
		fmt.Printf("%-28s %10.3f %10.1f %10.3f %12.1f\n", e.name, e.t.wall.Seconds(), mb/e.t.wall.Seconds(), e.t.cpu.Seconds(), mb/e.t.cpu.Seconds())
	}
	if glTime.wall > 0 {
		fmt.Printf("speed-up (Find / gitleaks): %.1fx wall, %.1fx CPU\n", glTime.Seconds()/airTime.Seconds(), glTime.cpu.Seconds()/airTime.cpu.Seconds())
	}

	// Recall per kind and per category.
	byKind := map[string]*tally{}
	byCategory := map[string]*tally{}
	ci := 0
	lineChunk, linePos, line := -1, 0, 0
	for _, p := range planted {
		for ci < len(chunks)-1 && p.Start >= chunks[ci].end {
			ci++
		}
		c := chunks[ci]
		s, e := p.Start-c.start, p.End-c.start
		air := false
		for _, f := range airFound[ci] {
			if f.Start <= s && f.End >= e {
				air = true
				break
			}
		}
		gl := false
		val := string(c.text[s:e])
		// Planted secrets come in order: count lines on from the last one.
		if ci != lineChunk {
			lineChunk, linePos, line = ci, 0, 0
		}
		line += bytes.Count(c.text[linePos:s], nl)
		linePos = s
		l0, l1 := line, line+bytes.Count(c.text[s:e], nl)
		for _, h := range glFound[ci] {
			if h.startLine > l1 || h.endLine < l0-1 || h.endLine-h.startLine > l1-l0+1 {
				continue // elsewhere, or a match that runs on over many lines it did not find
			}
			for _, g := range h.vals {
				if g != "" && (strings.Contains(g, val) || len(g) >= 8 && strings.Contains(val, g)) {
					gl = true
				}
			}
		}
		count(byKind, p.Kind, air, gl)
		count(byCategory, p.Category, air, gl)
	}
	printRecall("kind", byKind)
	printRecall("category", byCategory)

	if *clean != "" {
		cleanText, files, err := cleanCorpus(strings.Split(*clean, ","), *cleanSize*1_000_000, *seed)
		if err != nil {
			fatal(err)
		}
		falsePositives(cleanText, files, split(cleanText, *chunkMiB<<20), rd, gl, *withGitleaks, *showClean)
	}
}

// glHit is what a gitleaks finding says: its secret and match, and its
// lines in the chunk, counted from 0.
type glHit struct {
	vals               []string
	startLine, endLine int
}

var nl = []byte("\n")

// tally counts planted secrets and what each engine found of them.
type tally struct{ n, air, gl int }

func count(m map[string]*tally, key string, air, gl bool) {
	t := m[key]
	if t == nil {
		t = &tally{}
		m[key] = t
	}
	t.n++
	if air {
		t.air++
	}
	if gl {
		t.gl++
	}
}

func printRecall(by string, m map[string]*tally) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Printf("\n%-22s %7s %9s %9s\n", by, "planted", "airlock", "gitleaks")
	var n, air, g int
	for _, k := range keys {
		t := m[k]
		n, air, g = n+t.n, air+t.air, g+t.gl
		fmt.Printf("%-22s %7d %8.1f%% %8.1f%%\n", k, t.n, pct(t.air, t.n), pct(t.gl, t.n))
	}
	fmt.Printf("%-22s %7d %8.1f%% %8.1f%%\n", "all", n, pct(air, n), pct(g, n))
}

type chunk struct {
	text       []byte
	start, end int
}

// split cuts text into chunks of about size bytes, each ending at a line
// end, so that no engine sees a secret cut in two.
func split(text []byte, size int) []chunk {
	var out []chunk
	for start := 0; start < len(text); {
		end := min(len(text), start+size)
		if end < len(text) {
			if i := bytes.LastIndexByte(text[start:end], '\n'); i > 0 {
				end = start + i + 1
			}
		}
		out = append(out, chunk{text[start:end], start, end})
		start = end
	}
	return out
}

// timing is one engine's median wall time and median process CPU time
// (user + system, all threads) over the rounds. On a shared machine the
// CPU time is the steadier figure.
type timing struct{ wall, cpu time.Duration }

func (t timing) Seconds() float64 { return t.wall.Seconds() }

func timeRounds(rounds int, fn func()) timing {
	var walls, cpus []time.Duration
	for range rounds {
		runtime.GC()
		c0, t := cpuTime(), time.Now()
		fn()
		walls = append(walls, time.Since(t))
		cpus = append(cpus, cpuTime()-c0)
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	return timing{walls[len(walls)/2], cpus[len(cpus)/2]}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func pct(a, n int) float64 {
	if n == 0 {
		return 0
	}
	return 100 * float64(a) / float64(n)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "redactbench:", err)
	os.Exit(1)
}
