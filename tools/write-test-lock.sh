#!/bin/sh
# write-test-lock.sh PYTHON LOCKFILE: records the packages installed in PYTHON's
# environment (pip freeze, the editable h5turbo left out) as pip constraints, for
# `make test TEST_DEPS=locked`. Run through `make test-locks` after `make test` passed.
set -eu
python=$1
lock=$2
version=$("$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
{
    echo "# The test dependencies a full \`make test\` last passed with (Python $version,"
    echo "# $(date -u +%Y-%m-%d)). Written by \`make test-locks\`; used by \`make test TEST_DEPS=locked\`."
    "$python" -m pip freeze --exclude-editable
} > "$lock.tmp"
mv "$lock.tmp" "$lock"
echo "wrote $lock ($(grep -vc '^#' "$lock") packages)"
