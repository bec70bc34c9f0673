#!/bin/sh
# Runs the suites that touch the host (end-to-end CLI, private root,
# supervision, plugin host) again as an unprivileged user, since users run
# warden without root. Run as root: it creates the user when missing,
# compiles the test binaries as root and runs them as the user with a home,
# a temp directory and a Go cache of their own.
set -eu
user=${WARDEN_TEST_USER:-warden-test}
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" != 0 ]; then
	echo "test-unprivileged: run as root (it creates and switches to $user)" >&2
	exit 1
fi
if ! id -u "$user" >/dev/null 2>&1; then
	useradd --create-home --shell /bin/sh "$user"
fi
home=$(getent passwd "$user" | cut -d: -f6)
work=$(mktemp -d /tmp/warden-unpriv-XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
cp -a "$top/bin" "$work/bin"
pkgs="./cmd/warden ./core/privroot ./core/supervise ./core/pluginhost ./plugins/bubblewrap/bwrapplan ./plugins/strace/straceaudit ./plugins/strace/trace ${WARDEN_UNPRIV_EXTRA:-}"
status=0
for pkg in $pkgs; do
	name=$(echo "$pkg" | tr '/.' '__')
	(cd "$top" && go test -c -o "$work/$name.test" "$pkg")
	chmod 755 "$work/$name.test"
	echo "== $pkg as $user"
	# The test binary runs in its package directory, as go test does.
	if ! (cd "$top/$pkg" && runuser -u "$user" -- env -i \
		PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" USER="$user" LANG=C.UTF-8 \
		WARDEN_BIN="$work/bin" \
		"$work/$name.test" -test.count=1 -test.timeout=10m); then
		status=1
	fi
done
exit $status
