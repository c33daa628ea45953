#!/usr/bin/env bash
# Builds the Redis-compatible servers whose sources are in a directory
# (default ../shared/servers beside the clone, or $REDLEASE_SERVER_SOURCES):
# each <name>-<version>.tar.gz listed in its SHA256SUMS is checked, built
# once with TLS (make BUILD_TLS=yes) and cached outside the clone, keyed by
# name and version, as
#   $cache/servers/<name>-<version>/bin/{redis-server,redis-sentinel,redis-cli}
# (Valkey's binaries under the names the test harness runs). Prints one
# such bin directory per line on stdout. Without sources it says so on
# stderr and prints nothing: the matrix then runs what is installed.
#
# Usage: hack/build-servers.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
src=${REDLEASE_SERVER_SOURCES:-$root/../shared/servers}
cache=${REDLEASE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redlease}/servers

say() { printf '[build-servers] %s\n' "$*" >&2; }

if [ ! -f "$src/SHA256SUMS" ]; then
	say "no server sources at $src (SHA256SUMS missing): the matrix runs the installed redis-server only"
	exit 0
fi

need=()
command -v make >/dev/null || need+=(make)
command -v gcc >/dev/null || need+=(gcc)
[ -e /usr/include/openssl/ssl.h ] || need+=(libssl-dev)
command -v pkg-config >/dev/null || need+=(pkg-config)
if [ ${#need[@]} -gt 0 ]; then
	say "installing ${need[*]} (Debian)"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

while read -r sum tarball; do
	name=${tarball%.tar.gz}
	out=$cache/$name
	if [ ! -x "$out/bin/redis-server" ]; then
		say "checking $tarball"
		echo "$sum  $src/$tarball" | sha256sum --check --quiet
		say "building $name with TLS (cold: a few minutes on 2 cores; cached in $out)"
		work=$(mktemp -d)
		trap 'rm -rf "$work"' EXIT
		tar -xzf "$src/$tarball" -C "$work"
		(cd "$work/$name" && make -j"$(nproc)" BUILD_TLS=yes >"$work/build.log" 2>&1) || {
			tail -30 "$work/build.log" >&2
			exit 1
		}
		rm -rf "$out.tmp" && mkdir -p "$out.tmp/bin"
		for role in server sentinel cli; do
			for flavour in redis valkey; do
				if [ -x "$work/$name/src/$flavour-$role" ]; then
					cp -L "$work/$name/src/$flavour-$role" "$out.tmp/bin/redis-$role"
					break
				fi
			done
			[ -x "$out.tmp/bin/redis-$role" ] || { say "$name: no $role binary built"; exit 1; }
		done
		rm -rf "$out" && mv "$out.tmp" "$out"
		rm -rf "$work"
		trap - EXIT
	fi
	echo "$out/bin"
done <"$src/SHA256SUMS"
