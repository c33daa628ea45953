#!/usr/bin/env bash
# Tears down what up.sh recorded in $STATE, on any exit path and from any
# point of a partial bring-up: pods and containers, processes by the PID
# recorded, iptables (kube-proxy's, the kubelet's, the containment rule),
# the bridge, network namespaces, mounts, cgroups, fixed host paths, sysctls.
# Fails when the containment rule's counter is not 0: a pod sent traffic off
# the bridge. Safe to run twice.
set -uo pipefail
source "$(dirname "$0")/env.sh"

[ -e "$STATE" ] || { say "nothing to tear down ($STATE absent)"; exit 0; }
rc=0
ctd=$NODE_DIR/containerd
ctr_() { ctr --address "$ctd/containerd.sock" -n k8s.io "$@"; }
pid_of() { awk -v n="$1" '$1 == "pid" && $2 == n {print $3}' "$STATE" | tail -n 1; }

# stop NAME: SIGTERM to the recorded PID, SIGKILL after 15 s.
stop() {
	local pid i
	pid=$(pid_of "$1")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid"
	for ((i = 0; i < 75; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
	say "$1 ($pid) ignored SIGTERM for 15 s: SIGKILL"
	kill -KILL "$pid" 2>/dev/null
	wait_gone "$pid"
}
wait_gone() { while kill -0 "$1" 2>/dev/null; do sleep 0.1; done; }

say "tearing down"
stop kube-controller-manager
stop kube-scheduler
# Pods first, through the kubelet: it stops their sandboxes, which releases
# their network namespaces and addresses through CNI.
if [ -n "$(pid_of kubelet)" ] && kill -0 "$(pid_of kubelet)" 2>/dev/null && kubectl get --raw /readyz >/dev/null 2>&1; then
	kubectl delete pods --all --all-namespaces --force --grace-period=0 --wait=false >/dev/null 2>&1
	for ((i = 0; i < 150; i++)); do
		[ -z "$(ctr_ tasks ls -q 2>/dev/null)" ] && break
		sleep 0.2
	done
fi
stop kubelet
# Whatever the kubelet left: kill and delete through containerd.
if [ -n "$(pid_of containerd)" ] && kill -0 "$(pid_of containerd)" 2>/dev/null; then
	for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -a -s SIGKILL "$t" >/dev/null 2>&1; done
	for ((i = 0; i < 50; i++)); do
		[ -z "$(ctr_ tasks ls 2>/dev/null | awk 'NR > 1 && $3 != "STOPPED"')" ] && break
		sleep 0.2
	done
	for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$t" >/dev/null 2>&1; done
	for c in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers delete "$c" >/dev/null 2>&1; done
fi
stop containerd
# A shim whose container is gone exits by itself; one that did not is found
# by the socket address of this cluster's containerd, never by name.
for p in /proc/[0-9]*; do
	if { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q -- "-address $ctd/containerd.sock"; then
		say "containerd shim ${p#/proc/} left: SIGKILL"
		kill -KILL "${p#/proc/}" 2>/dev/null
	fi
done

stop kube-proxy
kube-proxy --cleanup >/dev/null 2>&1
stop kube-apiserver
stop etcd

# The containment rule: its counter must be 0.
reject=$(awk '$1 == "reject" {sub(/^reject /, ""); print}' "$STATE")
if [ -n "$reject" ]; then
	pkts=$(iptables -L FORWARD -v -n -x | awk '/redlease-node-containment/ {print $1}')
	if [ "${pkts:-0}" != 0 ]; then
		say "FAIL: $pkts packets were forwarded from $BRIDGE to outside $POD_CIDR (rejected): a pod tried to leave the machine"
		rc=1
	else
		say "containment rule: 0 packets forwarded off the bridge"
	fi
	# shellcheck disable=SC2086 # the recorded rule, word by word
	iptables -D $reject
fi
# What kube-proxy --cleanup leaves, and the kubelet's chains: every rule
# jumping to a KUBE- chain, then the chains.
for ipt in iptables ip6tables; do
	for t in filter nat mangle; do
		"$ipt" -t "$t" -S 2>/dev/null | grep -E -- '-j KUBE-' | sed 's/^-A /-D /' | while read -r rule; do
			# shellcheck disable=SC2086 # iptables -S prints the rule as words
			eval "$ipt -t $t $rule"
		done
		for c in $("$ipt" -t "$t" -S 2>/dev/null | awk '/^-N KUBE-/ {print $2}'); do "$ipt" -t "$t" -F "$c"; done
		for c in $("$ipt" -t "$t" -S 2>/dev/null | awk '/^-N KUBE-/ {print $2}'); do "$ipt" -t "$t" -X "$c"; done
	done
done

# Network namespaces the CRI made, mounts under the scratch folder and the
# kubelet's fixed paths (deepest first).
awk '$1 == "netns-before" {print $2}' "$STATE" | sort >"$NODE_DIR/netns-before"
for ns in $(ls /run/netns 2>/dev/null | sort | comm -23 - "$NODE_DIR/netns-before"); do
	umount "/run/netns/$ns" 2>/dev/null
	rm -f "/run/netns/$ns"
done
for m in $(awk -v d="$NODE_DIR" '$2 ~ "^"d || $2 ~ "^/var/lib/kubelet" {print $2}' /proc/mounts | sort -r); do umount -l "$m"; done
ip link del "$BRIDGE" 2>/dev/null
# Cgroups, once their processes are gone.
for h in /sys/fs/cgroup/*/; do
	for g in kubepods k8s.io; do
		[ -d "$h$g" ] && find "$h$g" -depth -type d -exec rmdir {} + 2>/dev/null
		[ -d "$h$g" ] && { say "cgroup $h$g still has processes"; rc=1; }
	done
done
awk '$1 == "path" {print $2}' "$STATE" | while read -r p; do rm -rf "$p"; done
awk '$1 == "emptydir" {print $2}' "$STATE" | while read -r p; do rmdir "$p" 2>/dev/null; done
awk '$1 == "sysctl" {print $2, $3}' "$STATE" | while read -r k v; do sysctl -qw "$k=$v"; done
rm -rf "$NODE_DIR"
say "torn down"
exit "$rc"
