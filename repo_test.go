// Tests that keep the repository's conventions true for every package.
package airlock_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackagesHaveDocComments fails when a package of the module has no doc
// comment: "Package name ..." for a library, "Command name ..." for main.
func TestPackagesHaveDocComments(t *testing.T) {
	dirs := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			// testdata is data; bench is its own module; dot folders are tooling.
			if path != "." && (name == "testdata" || strings.HasPrefix(name, ".") || path == "bench") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dirs[filepath.Dir(path)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("found no packages: is the test running at the module root?")
	}
	for dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var pkg, doc string
		fset := token.NewFileSet()
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.PackageClauseOnly)
			if err != nil {
				t.Fatal(err)
			}
			pkg = f.Name.Name
			if f.Doc != nil {
				doc += f.Doc.Text()
			}
		}
		want := "Package " + pkg + " "
		if pkg == "main" {
			want = "Command " + filepath.Base(dir) + " "
		}
		if !strings.HasPrefix(doc, want) {
			t.Errorf("%s: package %s has no doc comment starting %q", dir, pkg, want)
		}
	}
}

// TestDependenciesAreExplained fails when a module that go.mod requires
// has no line in DEPENDENCIES.md saying why it is there.
func TestDependenciesAreExplained(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("DEPENDENCIES.md")
	if err != nil {
		t.Fatal(err)
	}
	inBlock, n := false, 0
	for _, line := range strings.Split(string(mod), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			inBlock = true
			continue
		case line == ")":
			inBlock = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inBlock:
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		n++
		if !strings.Contains(string(doc), fields[0]) {
			t.Errorf("go.mod requires %s, which DEPENDENCIES.md does not explain: add a line saying why", fields[0])
		}
	}
	if n == 0 {
		t.Fatal("found no requirement in go.mod")
	}
}
