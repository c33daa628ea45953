#!/usr/bin/env bash
# Makes sure the lock agent's example clients can run (test/agentclients):
# curl, python3, and Node.js 20 or later with npm. Installs Debian's
# packages for what is missing; a Node.js older than 20 is not replaced
# (the machine's own is kept) and fails here with what to do.
set -euo pipefail
. "$(dirname "$0")/lib-apt.sh"

say() { printf '[install-clients] %s\n' "$*" >&2; }

missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
	apt_install install-clients "${missing[@]}"
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
	say "Node.js $(node --version) is older than 20, which @connectrpc/connect-node needs: install Node.js 20 or later"
	exit 1
fi
