#!/usr/bin/env bash
# Runs every test of the project on a fresh machine of this kind: formatting
# and vet, the unit, property and CLI tests, each fuzz target for a bounded
# time, the benchmark harness's own tests, and one pass of every benchmark
# so that they keep compiling and running.
set -euo pipefail
cd "$(dirname "$0")"

# airlock is built static, as it is installed (README, Install): every
# build and test binary here too.
export CGO_ENABLED=0

FUZZTIME=${FUZZTIME:-10s}
# No minimizing here: the fuzzer's minimizing of a new input can run past
# -fuzztime (seen with it bounded to 3s on targets whose every run talks
# to Redis or the disk). A crasher is still written to testdata/fuzz, as
# found; minimize it by hand with -fuzzminimizetime.
FUZZMINIMIZE=${FUZZMINIMIZE:-0}

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

echo "== the end-to-end tests' Node packages (npm ci): MCP clients, the conformance suite, aimock, Claude Code and Codex"
bash e2e/setup.sh >/dev/null
bash e2e/aimock/setup.sh >/dev/null
bash e2e/clients/setup.sh >/dev/null

echo "== services the store tests use: Postgres and Redis (started if down)"
bash scripts/start-services.sh

echo "== sandbox backends: bubblewrap, Podman with its API socket, the busybox test image"
bash scripts/setup-sandbox.sh

echo "== go test"
go test -count=1 ./...

echo "== fuzz ($FUZZTIME each)"
# Every fuzz target of the module, found in the sources so that a new one
# cannot be forgotten, each for a bounded time. Their corpora live in
# testdata/fuzz and also run, as seeds, in the go test above.
targets=$(grep -rlE '^func Fuzz[A-Za-z0-9_]+' --include='*_test.go' --exclude-dir=bench --exclude-dir=node_modules . |
	while read -r file; do
		for name in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | cut -d' ' -f2); do
			echo "$(dirname "$file"):$name"
		done
	done | sort)
[ -n "$targets" ] || { echo "test.sh: found no fuzz targets"; exit 1; }
for target in $targets; do
	pkg=${target%%:*} name=${target#*:}
	fuzz() { go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZE" "$pkg" 2>&1; }
	if ! out=$(fuzz); then
		# Go's fuzzing engine can report its own -fuzztime deadline as a
		# failure ("context deadline exceeded"): its coordinator may see
		# the deadline before the workers' context is cancelled. That
		# failure found nothing (no input written); such a run, and only
		# such a run, is tried once more.
		if grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
			echo "$name: the fuzzing engine's deadline race, nothing found; once more"
			out=$(fuzz) || { echo "$out"; exit 1; }
		else
			echo "$out"
			exit 1
		fi
	fi
	echo "$name: $(tail -n 1 <<<"$out")"
done

echo "== benchmarks, one pass"
go test -run '^$' -bench . -benchtime 1x ./... >/dev/null

echo "== comparison harness tests"
(cd bench && go test -count=1 ./...)
