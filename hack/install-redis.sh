#!/usr/bin/env bash
# Makes sure Debian's redis-server and redis-sentinel (and redis-cli) are on
# PATH; the tests start real servers and never mock Redis.
set -euo pipefail

missing=()
for b in redis-server redis-sentinel redis-cli; do
	command -v "$b" >/dev/null 2>&1 || missing+=("$b")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "[install-redis] missing: ${missing[*]}; installing Debian's redis-server, redis-sentinel and redis-tools" >&2
if [ "$(id -u)" != 0 ]; then
	echo "[install-redis] not root: run 'sudo apt-get update && sudo apt-get install -y redis-server redis-sentinel redis-tools', then retry" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "[install-redis] no apt-get: install redis-server, redis-sentinel and redis-cli (Redis >= 7) from your OS, then retry" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends redis-server redis-sentinel redis-tools >/dev/null
# The packages start a system-wide server on :6379; the tests need none of it.
if command -v service >/dev/null 2>&1; then
	service redis-server stop >/dev/null 2>&1 || true
	service redis-sentinel stop >/dev/null 2>&1 || true
fi
echo "[install-redis] installed $(redis-server --version | cut -d' ' -f3)" >&2
