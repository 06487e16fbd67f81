#!/usr/bin/env bash
# Installs the coding agents the clients tests drive, exactly as
# package-lock.json pins them: Claude Code (@anthropic-ai/claude-code) and
# the Codex CLI (@openai/codex). Each ships its native build in an optional
# dependency for the platform, which runs as it is: no install script is
# needed, and none runs here. Safe to run again: it does nothing when
# node_modules was installed from this package.json and package-lock.json.
# Prints the two binaries' paths on its last two lines.
set -euo pipefail
cd "$(dirname "$0")"

command -v npm >/dev/null || {
	echo "e2e/clients/setup.sh: npm is required for the clients tests (Debian: apt-get install npm)" >&2
	exit 1
}

# The paths clients_test.go runs, for linux-x64 (the platform of this
# project's machines).
claude=$PWD/node_modules/@anthropic-ai/claude-code-linux-x64/claude
codex=$PWD/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex

stamp=node_modules/.airlock-clients.sha256
want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
if [ -x "$claude" ] && [ -x "$codex" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	: # node_modules was installed from these very files
else
	# --ignore-scripts: Claude Code's postinstall only copies its native
	# binary over a stub launcher, and the tests run the native binary
	# where the platform package put it.
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2 || {
		echo "e2e/clients/setup.sh: npm ci failed; see above" >&2
		exit 1
	}
	echo "$want" >"$stamp"
fi

# Each must run here; neither reaches the network for --version.
for bin in "$claude" "$codex"; do
	home=$(mktemp -d)
	if ! version=$(HOME=$home "$bin" --version 2>/dev/null); then
		rm -rf "$home"
		echo "e2e/clients/setup.sh: $bin does not run" >&2
		exit 1
	fi
	rm -rf "$home"
	echo "e2e/clients/setup.sh: $version" >&2
done
echo "$claude"
echo "$codex"
