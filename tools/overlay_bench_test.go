package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"airlock.dev/airlock/sandbox/native"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/workspace"
)

// BenchmarkRunCommand measures what the copy-on-write view costs a
// command, side by side with the same command writing in place, on the
// native backend: spawning `true` (an overlay made, read and dropped), and
// a realistic job that unpacks a C source tree, builds it with make and
// runs its tests, its changes then applied with their old versions kept;
// and the copy view bubblewrap 0.8 and the container engine get instead
// of an overlay (here on the native backend, to time the copy alone).
//
//	go test ./tools -run '^$' -bench RunCommand -benchtime 20x
func BenchmarkRunCommand(b *testing.B) {
	sb, err := native.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, job := range []struct{ name, line string }{
		{"true", "true"},
		{"unpack-build-test", "rm -rf build && mkdir build && tar xf src.tar -C build && make -s -C build -j2 && ./build/test"},
	} {
		for _, view := range []string{"in-place", "overlay", "copy"} {
			b.Run(job.name+"/"+view, func(b *testing.B) {
				dir := b.TempDir()
				makeSourceTarball(b, dir, 100)
				var opts RunCommandOptions
				if view != "in-place" {
					ws, err := workspace.Open(dir, nil)
					if err != nil {
						b.Fatal(err)
					}
					defer ws.Close()
					opts.Workspace = ws
				}
				if view == "copy" {
					opts.copyView = new(atomic.Bool)
					opts.copyView.Store(true) // as on a backend that refused the overlay
				}
				rc := RunCommand(sb, dir, &opts)
				args, _ := json.Marshal(map[string]any{"command": job.line, "timeout_seconds": 120})
				b.ResetTimer()
				for i := range b.N {
					res, err := rc.Run(context.Background(), &tool.Call{Args: args, Session: fmt.Sprintf("b%d", i)})
					if err != nil || res.Error != nil || !strings.HasPrefix(res.Content, "exit code: 0") {
						b.Fatalf("%v %+v", err, res)
					}
					if res.Changes != nil {
						if _, err := res.Changes.Apply(context.Background()); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// makeSourceTarball writes src.tar into dir: n C files, a test program
// calling each, and a Makefile.
func makeSourceTarball(b *testing.B, dir string, n int) {
	b.Helper()
	src := b.TempDir()
	var calls, decls strings.Builder
	for i := range n {
		code := fmt.Sprintf("int f%d(int x) {\n\tint s = 0;\n\tfor (int i = 0; i < x; i++)\n\t\ts += i * %d;\n\treturn s;\n}\n", i, i+1)
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("f%d.c", i)), []byte(code), 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(&decls, "int f%d(int);\n", i)
		fmt.Fprintf(&calls, "\tif (f%d(10) != 45 * %d) return 1;\n", i, i+1)
	}
	main := "#include <stdio.h>\n" + decls.String() + "int main(void) {\n" + calls.String() + "\tputs(\"ok\");\n\treturn 0;\n}\n"
	mk := "SRCS := $(wildcard f*.c)\ntest: test.o $(SRCS:.c=.o)\n\t$(CC) -o $@ $^\n%.o: %.c\n\t$(CC) -O1 -c -o $@ $<\n"
	os.WriteFile(filepath.Join(src, "test.c"), []byte(main), 0o644)
	os.WriteFile(filepath.Join(src, "Makefile"), []byte(mk), 0o644)
	if out, err := exec.Command("tar", "cf", filepath.Join(dir, "src.tar"), "-C", src, ".").CombinedOutput(); err != nil {
		b.Fatalf("tar: %v\n%s", err, out)
	}
}
