#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest).
#   scripts/test.sh            release build in build/
#   TILEDBFS_SANITIZE=1 scripts/test.sh   ASan+UBSan build in build-asan/
set -euo pipefail
TILEDBFS_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$TILEDBFS_ROOT/scripts/lib.sh"
tiledbfs_install_deps
if [ "${TILEDBFS_SANITIZE:-0}" = 1 ]; then
  dir="$TILEDBFS_ROOT/build-asan"
  tiledbfs_build "$dir" -DTILEDBFS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
else
  dir="$TILEDBFS_ROOT/build"
  tiledbfs_build "$dir"
fi
cd "$dir"
ctest --output-on-failure -j "$(nproc)"
