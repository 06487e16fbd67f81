package command

import "testing"

// BenchmarkCheck measures Check on typical commands: a build, a pipeline,
// a wrapped destructive command and a nested script.
func BenchmarkCheck(b *testing.B) {
	p := Default()
	for _, bc := range []struct{ name, script string }{
		{"simple", "go test ./..."},
		{"pipeline", "find . -name '*.go' | xargs grep -l TODO | sort | uniq -c"},
		{"wrapped", "env FOO=1 nice -n 5 timeout 10 rm -rf /"},
		{"nested", `sh -c 'cd src && bash -c "make -j2 && ls -la build"'`},
		{"script", "set -e\nfor f in *.txt; do\n  if [ -f \"$f\" ]; then wc -l \"$f\" > /tmp/out; fi\ndone\ngit add . && git commit -m 'x'"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Check(bc.script, nil)
			}
		})
	}
}
