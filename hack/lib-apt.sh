# Sourced by hack/install-*.sh: installs Debian packages, or says how when
# it cannot (not root, or no apt-get), so every installer fails the same
# readable way.
#
# apt_install TAG PACKAGE...: installs the packages quietly, without
# recommends; TAG prefixes the messages.
apt_install() {
	local tag=$1
	shift
	echo "[$tag] installing Debian's $*" >&2
	if [ "$(id -u)" != 0 ]; then
		echo "[$tag] not root: run 'sudo apt-get update && sudo apt-get install -y --no-install-recommends $*', then retry" >&2
		exit 1
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "[$tag] no apt-get: install $* (or your OS's names for them), then retry" >&2
		exit 1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
