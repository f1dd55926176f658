#!/bin/sh
# A test that cannot run in this build: says why and exits 77, which ctest
# reports as SKIPPED (SKIP_RETURN_CODE in tests/CMakeLists.txt).
#   usage: skipped.sh "why"
echo "SKIPPED: $1"
exit 77
