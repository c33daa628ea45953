#!/usr/bin/env bash
# Makes sure Debian's Graphviz (dot) and the DejaVu fonts are installed:
# `make diagrams` renders docs/diagrams/*.dot with them, and `make verify`
# renders them again to find a stale SVG. The diagrams name DejaVu Sans, so
# dot measures their text with the same font wherever it runs, and the SVGs
# come out byte for byte the same.
set -euo pipefail

command -v dot >/dev/null 2>&1 && fc-list 2>/dev/null | grep -q 'DejaVu Sans' && exit 0

echo "[install-graphviz] installing Debian's graphviz and fonts-dejavu-core" >&2
if [ "$(id -u)" != 0 ]; then
	echo "[install-graphviz] not root: run 'sudo apt-get update && sudo apt-get install -y --no-install-recommends graphviz fonts-dejavu-core', then retry" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "[install-graphviz] no apt-get: install Graphviz (dot) and the DejaVu fonts from your OS, then retry" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends graphviz fonts-dejavu-core >/dev/null
echo "[install-graphviz] installed $(dot -V 2>&1)" >&2
