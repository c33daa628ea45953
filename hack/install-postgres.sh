#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries (initdb, pg_ctl, postgres) exist:
# the fault suite checks fenced SQL writes against a real, throwaway cluster.
set -euo pipefail
. "$(dirname "$0")/lib-apt.sh"

if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
	exit 0
fi
echo "[install-postgres] initdb not found" >&2
apt_install install-postgres postgresql
if command -v service >/dev/null 2>&1; then
	service postgresql stop >/dev/null 2>&1 || true
fi
echo "[install-postgres] installed" >&2
