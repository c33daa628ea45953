#!/usr/bin/env bash
# The server matrix (make test-servers): the suites that exercise what
# differs between Redis-compatible servers, once per flavour — Debian's
# redis-server and each server hack/build-servers.sh built, the flavours at
# once, each its suites in order — with that
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
# The tests that step a server's clock run a built server where the
# flavour's links the system jemalloc (Makefile's STEPPABLE).
if [ -z "${REDLEASE_STEPPABLE_SERVER:-}" ] && [ ${#flavours[@]} -gt 0 ]; then
	export REDLEASE_STEPPABLE_SERVER="${flavours[-1]}/redis-server"
fi
if [ ${#flavours[@]} -eq 0 ]; then
	echo "[test-servers] SKIPPED: no other server to test (no sources, see above)"
	exit 0
fi

# Every flavour runs at once, each its suites in order: the suites wait on
# servers and timers far more than they compute, so two flavours on two
# cores take little longer than one. Each flavour writes its cells and its
# failures to files of its own; the matrix is printed when all are done.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run_flavour DIR N runs every suite with DIR's servers first on PATH.
run_flavour() {
	local dir=$1 n=$2 version name start verdict
	version=$("$dir/redis-server" --version | sed -E 's/^([A-Za-z]+) server v=([0-9.]+).*/\1 \2/')
	for s in "${suites[@]}"; do
		name=${s%%|*}
		read -r -a args <<<"${s#*|}"
		printf '[test-servers] %s: %s\n' "$version" "$name"
		start=$(date +%s)
		if PATH="$dir:$PATH" go test -count=1 -timeout 10m "${args[@]}" >"$work/$n.log" 2>&1; then
			verdict=pass
		else
			verdict=FAIL
			{
				printf '[test-servers] %s: %s FAILED\n' "$version" "$name"
				grep -a -E '^(---|    ---|        ---)|_test.go:[0-9]+:|^FAIL|panic' "$work/$n.log" | head -40
			} >>"$work/$n.failures"
		fi
		printf '%s|%s|%s|%s s\n' "$version" "$name" "$verdict" "$(($(date +%s) - start))" >>"$work/$n.cells"
	done
}

start=$(date +%s)
pids=()
for i in "${!flavours[@]}"; do
	run_flavour "${flavours[$i]}" "$i" &
	pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done

failed=0
for i in "${!flavours[@]}"; do
	if [ -s "$work/$i.failures" ]; then
		cat "$work/$i.failures"
		failed=1
	fi
done

printf '\n| server | suite | result | time |\n|---|---|---|---|\n'
for i in "${!flavours[@]}"; do
	while read -r r; do printf '| %s |\n' "${r//|/ | }"; done <"$work/$i.cells"
done
printf '\nall flavours at once: %s s\n' "$(($(date +%s) - start))"
exit $failed
