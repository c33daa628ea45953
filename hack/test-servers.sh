#!/usr/bin/env bash
# The server matrix (make test-servers): the suites that exercise what
# differs between Redis-compatible servers, once per flavour — Debian's
# redis-server, then each server hack/build-servers.sh built — with that
# flavour's redis-server, redis-sentinel and redis-cli first on PATH (the
# test harness runs whatever those names find). Prints a matrix of flavour
# × suite: pass/fail and time. Exits non-zero when any cell failed.
# SERVERS_SKIP_INSTALLED=1 leaves out the installed server (make test, whose
# main run has just tested it with every suite).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# suite name, then go test arguments.
suites=(
	"protocol|./internal/protocol/"
	"protocol (functions)|./internal/protocol/ -args -protocol.functions"
	"lock|./pkg/lock/"
	"election|./pkg/election/"
	"tenant ACLs|./internal/redisacl/"
	"controller probe, guard, preflight, ACL, TLS, functions|./controllers/ -run ^(TestStandalone|TestReplicated|TestSentinel|TestCluster|TestPreflight|TestConfigUnavailable|TestGuardReachesReplicas|TestClusterLockStoreACLIsolation|TestFenceFloor|TestTLS|TestAStoreLoadsTheLibraryAgainAfterARestartEmpty|TestAMixedVersionUpgradeToFunctionsOnly|TestAStoreWithoutFunctionsKeepsScripts|TestClusterLockStoreOnCluster)$"
	"servers that forbid administration (CONFIG, ACL, DEBUG, MONITOR renamed)|./controllers/ ./internal/redisacl/ ./internal/redistest/ -run ^(TestAdminForbidden|TestACLUnavailable|TestOptions)$"
	"failover quarantine (server identity from INFO: failover, restart, backlog, failover and back)|./test/chaos/ ./controllers/ -run ^(TestQuarantineAsyncFailoverLosesHeldKey|TestQuarantineRestartFromOlderRDB|TestQuarantineNotForBacklogChanges|TestQuarantineFailoverAndBack|TestFailoverQuarantine)$"
	"chaos (kills, pauses, failover, restart-empty, linearizability)|./test/chaos/ -run ^(TestHolderPausedPastItsTTL|TestMasterKilledBeforeReplicating|TestSentinelFailoverUnderLoad|TestFenceAfterRestartEmpty|TestLineHeadKilled|TestMaxConcurrent)$"
)

flavours=()
[ "${SERVERS_SKIP_INSTALLED:-}" = 1 ] || flavours+=("$(command -v redis-server | xargs dirname)")
while read -r dir; do flavours+=("$dir"); done < <(hack/build-servers.sh)
if [ ${#flavours[@]} -eq 0 ]; then
	echo "[test-servers] SKIPPED: no other server to test (no sources, see above)"
	exit 0
fi

results=()
failed=0
for dir in "${flavours[@]}"; do
	version=$("$dir/redis-server" --version | sed -E 's/^([A-Za-z]+) server v=([0-9.]+).*/\1 \2/')
	for s in "${suites[@]}"; do
		name=${s%%|*}
		read -r -a args <<<"${s#*|}"
		printf '[test-servers] %s: %s\n' "$version" "$name"
		start=$(date +%s)
		if PATH="$dir:$PATH" go test -count=1 -timeout 10m "${args[@]}" >"/tmp/test-servers.$$.log" 2>&1; then
			verdict=pass
		else
			verdict=FAIL
			failed=1
			grep -a -E '^(---|    ---|        ---)|_test.go:[0-9]+:|^FAIL|panic' "/tmp/test-servers.$$.log" | head -40
		fi
		results+=("$version|$name|$verdict|$(($(date +%s) - start)) s")
	done
done
rm -f "/tmp/test-servers.$$.log"

printf '\n| server | suite | result | time |\n|---|---|---|---|\n'
for r in "${results[@]}"; do printf '| %s |\n' "${r//|/ | }"; done
exit $failed
