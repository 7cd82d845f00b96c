#!/usr/bin/env bash
# The benchmark arrays read by TileDB itself: makes them small with
# scripts/make-bench-arrays.sh (dense1, dense16: 16 overlapping fragments;
# sparse8: 8 fragments of 100,000-cell tiles, written at 1 and 10-17 ms),
# dumps every view with the workshop oracle's refdump, and compares the viewer
# and a mount with the dumps (../shared/tools/conformance --full). A check of
# our writer at scale (TileDB reads what tiledb-mkarray wrote) and of the
# reader on many tiles. Run by hand, never by ctest (the project does not
# depend on the oracle):
#
#   tests/oracle/bench_arrays_check.sh BUILD_DIR [ORACLE_DIR] [WORKDIR]
#
# BUILD_DIR holds bin/tiledb-mkarray, bin/tiledbfs-view and bin/tiledbfs.
# ORACLE_DIR defaults to ../shared/oracle beside the project. Takes about two
# minutes (refdump of dense16 the most) and 3 GB of WORKDIR. Exit status 0
# when every view matches.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:?usage: bench_arrays_check.sh BUILD_DIR [ORACLE_DIR] [WORKDIR]}" && pwd)
ORACLE=$(cd "${2:-$ROOT/../shared/oracle}" && pwd)
WORK=${3:-$(mktemp -d /tmp/bench_arrays_check.XXXXXX)}
CONFORMANCE=$(dirname "$ORACLE")/tools/conformance
source "$ROOT/scripts/lib.sh"
tiledbfs_oracle_libs "$ORACLE" "$WORK/oracle-lib"
rm -rf "$WORK/src" "$WORK/arrays" "$WORK/expected"
mkdir -p "$WORK/arrays" "$WORK/expected"
# Scale 64 for the dense arrays (64 MiB of values each), 256 for sparse8 (5M
# cells over 5 bands of space tiles; at 64 it has one band).
TILEDBFS_BUILD=$BUILD BENCH_ARRAYS=dense "$ROOT/scripts/make-bench-arrays.sh" "$WORK/src" 64
TILEDBFS_BUILD=$BUILD BENCH_ARRAYS=sparse "$ROOT/scripts/make-bench-arrays.sh" "$WORK/src" 256
for a in dense1 dense16 sparse8; do
  mv "$WORK/src/$a" "$WORK/arrays/$a"
  LD_LIBRARY_PATH=$WORK/oracle-lib "$ORACLE/bin/refdump" "$WORK/arrays/$a" "$WORK/expected/$a" \
    >/dev/null
  echo "$a: dumped by TileDB"
done
python3 "$CONFORMANCE" --full --viewer "$BUILD/bin/tiledbfs-view" "$WORK"
if [ -e /dev/fuse ]; then
  python3 "$CONFORMANCE" --full --mount "$BUILD/bin/tiledbfs" "$WORK"
else
  echo "no /dev/fuse: the mount was not compared"
fi
