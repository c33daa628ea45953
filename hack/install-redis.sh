#!/usr/bin/env bash
# Makes sure Debian's redis-server and redis-sentinel (and redis-cli) are on
# PATH, and libfaketime installed; the tests start real servers and never
# mock Redis.
set -euo pipefail
. "$(dirname "$0")/lib-apt.sh"

# libfaketime steps a test server's wall clock
# (redistest.StartWithSteppableClock).
if ! compgen -G '/usr/lib/*/faketime/libfaketime.so.1' >/dev/null; then
	echo "[install-redis] missing: libfaketime" >&2
	apt_install install-redis libfaketime
fi

missing=()
for b in redis-server redis-sentinel redis-cli; do
	command -v "$b" >/dev/null 2>&1 || missing+=("$b")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "[install-redis] missing: ${missing[*]} (Redis >= 7)" >&2
apt_install install-redis redis-server redis-sentinel redis-tools
# The packages start a system-wide server on :6379; the tests need none of it.
if command -v service >/dev/null 2>&1; then
	service redis-server stop >/dev/null 2>&1 || true
	service redis-sentinel stop >/dev/null 2>&1 || true
fi
echo "[install-redis] installed $(redis-server --version | cut -d' ' -f3)" >&2
