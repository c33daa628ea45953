#!/usr/bin/env bash
# Makes sure the Debian packages the docs need are installed:
#   graphviz: Graphviz (dot) and the DejaVu fonts, for `make diagrams`
#     (and `make verify`, which renders again to find a stale SVG). The
#     diagrams name DejaVu Sans, so dot measures their text with the same
#     font wherever it runs and the SVGs come out byte for byte the same.
#   chromium: headless Chromium, for test/site (the built site in a browser).
#
# Usage: hack/install-docs-tools.sh graphviz|chromium...
set -euo pipefail

pkgs=()
for t in "$@"; do
	case $t in
	graphviz)
		command -v dot >/dev/null 2>&1 && fc-list 2>/dev/null | grep -q 'DejaVu Sans' || pkgs+=(graphviz fonts-dejavu-core) ;;
	chromium) command -v chromium >/dev/null 2>&1 || pkgs+=(chromium fonts-dejavu-core) ;;
	*) echo "[install-docs-tools] unknown tool $t" >&2; exit 2 ;;
	esac
done
[ ${#pkgs[@]} -eq 0 ] && exit 0

echo "[install-docs-tools] installing Debian's ${pkgs[*]}" >&2
if [ "$(id -u)" != 0 ]; then
	echo "[install-docs-tools] not root: run 'sudo apt-get update && sudo apt-get install -y --no-install-recommends ${pkgs[*]}', then retry" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "[install-docs-tools] no apt-get: install ${pkgs[*]} (or your OS's names for them), then retry" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
