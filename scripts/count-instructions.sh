#!/usr/bin/env bash
# Instructions executed by `tiledbfs-view ARRAY FILE > /dev/null` (valgrind's callgrind),
# build beside build: a yardstick for a change to the read path that does not move with
# the host's load, as times on a shared VM do. It counts instructions, not time: a change that
# trades instructions for memory traffic or page faults still needs bench.sh.
#   scripts/count-instructions.sh BUILD_DIR [BUILD_DIR...]
# Env: COUNT_ARRAY (default: a sparse8 of make-bench-arrays.sh at scale 256, 5M cells, made
# under COUNT_DIR=/tmp/tiledbfs-count with the first build's tiledb-mkarray when missing),
# COUNT_FILE (default data.csv). Installs valgrind with apt when missing. Each build's
# callgrind profile is kept beside the array (callgrind_annotate reads it). The view runs
# on CPU 0 alone, as target 5's one-core rows do: given both cores it also decodes and
# builds windows ahead on a second thread, whose share of the work depends on how
# valgrind schedules its threads (5M cells: 7.61 G instructions on one core, 8.09 G with
# two, for the same build).
set -euo pipefail
TILEDBFS_ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: count-instructions.sh BUILD_DIR [BUILD_DIR...]" >&2; exit 2; }
for b in "$@"; do
  [ -x "$b/bin/tiledbfs-view" ] || { echo "count-instructions: $b/bin/tiledbfs-view not found" >&2; exit 1; }
done
if ! command -v valgrind >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq valgrind >/dev/null
fi

dir=${COUNT_DIR:-/tmp/tiledbfs-count}
file=${COUNT_FILE:-data.csv}
array=${COUNT_ARRAY:-$dir/sparse8}
if [ -z "${COUNT_ARRAY:-}" ] && [ ! -d "$array/__schema" ]; then
  TILEDBFS_BUILD=$1 BENCH_ARRAYS=sparse "$TILEDBFS_ROOT/scripts/make-bench-arrays.sh" "$dir" 256
fi

# tiledbfs-view re-executes itself once with its malloc tunables (tools/malloc_tuning.h),
# which valgrind does not follow; it leaves a GLIBC_TUNABLES it is given alone, so it is
# given the same ones.
tunables=$(sed -n 's/^ *"\(glibc\.malloc[^"]*\)".*/\1/p' "$TILEDBFS_ROOT/tools/malloc_tuning.h" | tr -d '\n')
[ -n "$tunables" ] || { echo "count-instructions: no tunables in tools/malloc_tuning.h" >&2; exit 1; }

echo "instructions of tiledbfs-view $array $file > /dev/null (callgrind, CPU 0):"
first=""
k=0
for b in "$@"; do
  k=$((k + 1))
  out="$dir/callgrind.$k.out"
  mkdir -p "$dir"
  log=$(GLIBC_TUNABLES=$tunables taskset -c 0 valgrind --tool=callgrind \
    --callgrind-out-file="$out" "$b/bin/tiledbfs-view" "$array" "$file" 2>&1 >/dev/null) || {
    echo "$log" | tail -5 >&2
    exit 1
  }
  n=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' <<<"$log")
  [ -n "$n" ] || { echo "$log" | tail -5 >&2; exit 1; }
  if [ -z "$first" ]; then
    first=$n
    printf '  %-40s %15s   (%s)\n' "$b" "$n" "$out"
  else
    printf '  %-40s %15s %+7.2f %%   (%s)\n' "$b" "$n" \
      "$(awk -v a="$n" -v f="$first" 'BEGIN { print 100 * (a - f) / f }')" "$out"
  fi
done
