#!/bin/sh
# The demo project: a greeter with a bug the target is asked to fix.
echo "Hello, $1"
