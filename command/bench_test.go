package command

import "testing"

// BenchmarkCheck measures Check on typical commands: a build, a pipeline,
// a wrapped destructive command and a nested script; "writes" is a script
// of writes and deletes with Options.Exists set, as the gate calls it.
func BenchmarkCheck(b *testing.B) {
	p := Default()
	for _, bc := range []struct {
		name, script string
		opts         *Options
	}{
		{"simple", "go test ./...", nil},
		{"pipeline", "find . -name '*.go' | xargs grep -l TODO | sort | uniq -c", nil},
		{"wrapped", "env FOO=1 nice -n 5 timeout 10 rm -rf /", nil},
		{"nested", `sh -c 'cd src && bash -c "make -j2 && ls -la build"'`, nil},
		{"script", "set -e\nfor f in *.txt; do\n  if [ -f \"$f\" ]; then wc -l \"$f\" > /tmp/out; fi\ndone\ngit add . && git commit -m 'x'", nil},
		{"writes", "mkdir -p out && cp main.go x.c out/ && go test ./... > out/log.txt 2>&1; rm -f out/old.txt; sort -o out/s.txt notes.txt",
			&Options{Exists: workspaceExists}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Check(bc.script, bc.opts)
			}
		})
	}
}
