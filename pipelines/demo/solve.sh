#!/bin/sh
# The demo target: it fixes the greeter in its workspace (the punctuation
# the hidden tests expect) and shows that the tests are withheld from it.
set -eu
cd pipelines/demo/project
cat > greet.sh <<'SH'
#!/bin/sh
# The demo project: a greeter.
echo "Hello, ${1:-world}!"
SH
chmod +x greet.sh
if [ -e ../eval ]; then echo "the hidden tests are visible to the target" >&2; exit 1; fi
echo "fixed greet.sh"
