#!/bin/sh
# Installs what warden's build, demo and tests need on a Debian machine,
# only when it is missing. Run as root (CI and the README's set-up commands
# are); as another user it only reports what is missing.
set -eu
need=""
for pair in bwrap:bubblewrap strace:strace git:git; do
	cmd=${pair%%:*}; pkg=${pair#*:}
	command -v "$cmd" >/dev/null 2>&1 || need="$need $pkg"
done
if [ "${WARDEN_NEED_PROTOC:-}" = 1 ] && ! command -v protoc >/dev/null 2>&1; then
	need="$need protobuf-compiler"
fi
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages:$need (install them as root: apt-get install -y$need)" >&2
	exit 1
fi
echo "deps: installing$need" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq $need >/dev/null
