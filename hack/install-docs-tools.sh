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
. "$(dirname "$0")/lib-apt.sh"

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
apt_install install-docs-tools "${pkgs[@]}"
