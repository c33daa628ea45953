#!/usr/bin/env bash
# ledger.sh LOCK LEDGER N: N times, take LOCK through the pod-local lock
# agent with curl (Connect's HTTP/JSON, unary calls), append one write to
# the fenced LEDGER under the lease's fence, and give the lock back.
#
# The agent: lockctl agent (docs/agent.md), whose socket is in
# REDLEASE_AGENT_SOCKET (lockctl sidecar sets it; default
# /run/redlease/agent.sock). Needs bash, curl and sed, nothing else.
#
#   REDLEASE_AGENT_SOCKET=/tmp/agent.sock ./ledger.sh nightly /tmp/ledger 3
#
# The ledger is a tiny fenced store: one line "FENCE COUNT" per accepted
# write, the last line its state. It accepts a write only with a fence above
# the last one it accepted, so a writer whose lease ended (paused, cut off)
# is refused instead of overwriting its successor's work. Each accepted
# write prints "fence N".
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 LOCK LEDGER N" >&2; exit 2; }
lock=$1 ledger=$2 n=$3
socket=${REDLEASE_AGENT_SOCKET:-/run/redlease/agent.sock}
# A lease dies without a KeepAlive for this long: the agent stops renewing
# it, so a script that hangs cannot hold the lock for ever.
keep_alive_period=10s

# call METHOD JSON prints the reply; a Connect error (HTTP 4xx/5xx) prints
# its JSON body, {"code":"aborted","message":...}, and fails.
call() {
	curl -sS --fail-with-body --max-time 60 --unix-socket "$socket" \
		-H 'Content-Type: application/json' -d "$2" \
		"http://agent/redlease.lock.v1.LockService/$1"
}

# field NAME JSON prints a string field of a reply. Fences are uint64, which
# proto3 JSON writes as strings of digits ("fence":"1796483908589822"), so
# every field read here is a string. (With jq: jq -r .grant.fence.)
field() {
	sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" <<<"$2"
}

# greater A B: is the decimal A above B? Compared as strings (longer is
# larger, then digit by digit) because a uint64 may not fit bash's signed
# 64-bit arithmetic.
greater() {
	[ ${#1} -gt ${#2} ] || { [ ${#1} -eq ${#2} ] && [[ $1 > $2 ]]; }
}

lock_json="{\"name\":\"$lock\"}"
for ((i = 0; i < n; i++)); do
	# One attempt first; when the lock is held (ABORTED, HTTP 409), wait
	# for it in the agent's line (FIFO with every other client of the lock).
	if ! reply=$(call TryAcquireLease "{\"lock\":$lock_json,\"keepAlivePeriod\":\"$keep_alive_period\"}"); then
		grep -q '"code": *"aborted"' <<<"$reply" || { echo "TryAcquireLease: $reply" >&2; exit 1; }
		reply=$(call AcquireLease "{\"lock\":$lock_json,\"keepAlivePeriod\":\"$keep_alive_period\",\"wait\":\"50s\"}") ||
			{ echo "AcquireLease: $reply" >&2; exit 1; }
	fi
	lease=$(field leaseId "$reply")
	fence=$(field fence "$reply")

	# Read the ledger's state (no file yet: fence 0, count 0).
	last_fence=0 count=0
	[ -s "$ledger" ] && read -r last_fence count < <(tail -n 1 "$ledger")

	# Work that takes a while calls KeepAlive within keepAlivePeriod; a
	# failure (FAILED_PRECONDITION: the lease was lost) means stop writing.
	reply=$(call KeepAlive "{\"leaseId\":\"$lease\"}") || { echo "KeepAlive: $reply" >&2; exit 1; }

	# The store's check: a write carries the fence, and only a fence above
	# the last accepted one is taken.
	if ! greater "$fence" "$last_fence"; then
		echo "refused: fence $fence is not above the ledger's $last_fence" >&2
		exit 1
	fi
	echo "$fence $((count + 1))" >>"$ledger"
	echo "fence $fence"

	reply=$(call Release "{\"leaseId\":\"$lease\"}") || { echo "Release: $reply" >&2; exit 1; }
done
