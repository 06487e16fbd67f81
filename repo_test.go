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
