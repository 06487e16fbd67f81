#!/usr/bin/env bash
# Runs every test of the project on a fresh machine of this kind: formatting
# and vet, the unit, property and CLI tests, each fuzz target for a bounded
# time, the benchmark harness's own tests, and one pass of every benchmark
# so that they keep compiling and running.
set -euo pipefail
cd "$(dirname "$0")"

FUZZTIME=${FUZZTIME:-20s}

command -v go >/dev/null || { echo "test.sh: Go is required (go.dev/dl)" >&2; exit 1; }
[ -f ../shared/bench/calc-expressions.tsv ] || {
	echo "test.sh: ../shared/bench/calc-expressions.tsv is missing: the benchmarks and the harness need it" >&2
	exit 1
}

echo "== gofmt"
unformatted=$(gofmt -l . bench)
[ -z "$unformatted" ] || { echo "gofmt would change:"; echo "$unformatted"; exit 1; }

echo "== go vet"
go vet ./...
(cd bench && go vet ./...)

echo "== go test"
go test -count=1 ./...

echo "== fuzz ($FUZZTIME each)"
go test -run '^$' -fuzz '^FuzzEval$' -fuzztime "$FUZZTIME" ./calc

echo "== benchmarks, one pass"
go test -run '^$' -bench . -benchtime 1x ./... >/dev/null

echo "== comparison harness tests"
(cd bench && go test -count=1 ./...)
