#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries (initdb, pg_ctl, postgres) exist:
# the fault suite checks fenced SQL writes against a real, throwaway cluster.
set -euo pipefail

if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
	exit 0
fi
echo "[install-postgres] initdb not found; installing Debian's postgresql" >&2
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "[install-postgres] install PostgreSQL's server (initdb, pg_ctl) with your OS's package manager, then retry" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends postgresql >/dev/null
if command -v service >/dev/null 2>&1; then
	service postgresql stop >/dev/null 2>&1 || true
fi
echo "[install-postgres] installed" >&2
