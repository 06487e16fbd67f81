package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/zricethezav/gitleaks/v8/detect"

	"airlock.dev/airlock/redact"
)

// cleanExts are the extensions of the source and documentation files the
// clean corpus is made of.
var cleanExts = map[string]bool{
	".go": true, ".md": true, ".html": true, ".txt": true, ".py": true, ".js": true, ".ts": true,
	".rb": true, ".java": true, ".c": true, ".h": true, ".sh": true, ".yaml": true, ".yml": true,
	".json": true, ".toml": true, ".rst": true, ".s": true,
}

// skipDirs hold deliberate fake secrets (test fixtures) or copies of
// other projects.
var skipDirs = map[string]bool{
	"testdata": true, "test": true, "tests": true, "vendor": true, "node_modules": true, ".git": true, "__pycache__": true,
}

// maxCleanFile leaves out generated tables and bundles, which are neither
// code nor prose a person wrote.
const maxCleanFile = 1 << 20

// cleanFile is one file's place in the clean corpus.
type cleanFile struct {
	path       string
	start, end int
}

// cleanCorpus concatenates the files under roots, in an order shuffled by
// seed, until size bytes; the same roots and seed give the same bytes.
func cleanCorpus(roots []string, size int, seed uint64) ([]byte, []cleanFile, error) {
	var paths []string
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if skipDirs[d.Name()] {
					return filepath.SkipDir
				}
				return nil
			}
			name := d.Name()
			if (cleanExts[filepath.Ext(name)] || strings.HasPrefix(name, "README")) && !strings.Contains(name, "_test.") && !strings.Contains(name, ".test.") && !strings.HasPrefix(name, "test_") {
				paths = append(paths, p)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if len(paths) == 0 {
		return nil, nil, fmt.Errorf("no source or documentation files under %v", roots)
	}
	sort.Strings(paths)
	rand.New(rand.NewPCG(seed, 0xc1ea)).Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	var buf bytes.Buffer
	var files []cleanFile
	for _, p := range paths {
		if buf.Len() >= size {
			break
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, err
		}
		if len(b) > maxCleanFile || bytes.IndexByte(b, 0) >= 0 {
			continue
		}
		start := buf.Len()
		buf.Write(b)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			buf.WriteByte('\n')
		}
		files = append(files, cleanFile{p, start, buf.Len()})
	}
	return buf.Bytes(), files, nil
}

// falsePositives runs both engines on the clean corpus and prints what each
// finds, by kind (airlock) and rule (gitleaks).
func falsePositives(text []byte, files []cleanFile, chunks []chunk, rd *redact.Redactor, gl *detect.Detector, withGitleaks, show bool) {
	mb := float64(len(text)) / 1e6
	fmt.Printf("\nclean corpus: %d bytes from %d files\n", len(text), len(files))
	air := map[string]int{}
	glr := map[string]int{}
	for _, c := range chunks {
		for _, f := range rd.Find(c.text) {
			air[f.Kind]++
			if show {
				fmt.Printf("airlock %-16s %s: %s\n", f.Kind, fileAt(files, c.start+f.Start), lineAt(c.text, f.Start))
			}
		}
		if !withGitleaks {
			continue
		}
		for _, f := range gl.DetectBytes(c.text) {
			glr[f.RuleID]++
			if show {
				fmt.Printf("gitleaks %-15s %s\n", f.RuleID, strings.TrimSpace(f.Line))
			}
		}
	}
	report := func(name string, m map[string]int) {
		keys := make([]string, 0, len(m))
		n := 0
		for k, v := range m {
			keys = append(keys, k)
			n += v
		}
		slices.SortFunc(keys, func(a, b string) int { return m[b] - m[a] })
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
		fmt.Printf("%-9s %5d findings (%.2f per MB): %s\n", name, n, float64(n)/mb, strings.Join(parts, ", "))
	}
	report("airlock", air)
	if withGitleaks {
		report("gitleaks", glr)
	}
}

func fileAt(files []cleanFile, off int) string {
	i := sort.Search(len(files), func(i int) bool { return files[i].end > off })
	if i < len(files) {
		return files[i].path
	}
	return "?"
}

// lineAt is the line around off, cut to 200 bytes.
func lineAt(text []byte, off int) string {
	s := bytes.LastIndexByte(text[:off], '\n') + 1
	e := bytes.IndexByte(text[off:], '\n')
	if e < 0 {
		e = len(text)
	} else {
		e += off
	}
	line := strings.TrimSpace(string(text[s:e]))
	if len(line) > 200 {
		line = line[:200]
	}
	return line
}
