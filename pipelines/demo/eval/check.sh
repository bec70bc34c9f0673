#!/bin/sh
# Hidden tests of the demo, in TAP. They are withheld from the target and
# restored into the workspace only for scoring.
g=pipelines/demo/project/greet.sh
echo "1..3"
check() {
	n=$1; want=$2; shift 2
	got=$("$g" "$@" 2>&1)
	if [ "$got" = "$want" ]; then echo "ok $n - greet $* says '$want'"; else echo "not ok $n - greet $*: got '$got', want '$want'"; fi
}
check 1 "Hello, Ada!" Ada
check 2 "Hello, world!"
check 3 "Hello, Grace Hopper!" "Grace Hopper"
