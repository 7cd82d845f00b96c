#!/usr/bin/env bash
# Runs every fuzz target (fuzz/) under libFuzzer for SECONDS in total (split
# evenly, at least 5 s each), starting from fuzz/corpus/<target>/ plus
# fuzz/regressions/<target>/. Any crash/timeout/OOM input is copied into
# fuzz/regressions/<target>/ and the script exits 1. libFuzzer runs in fork
# mode, a worker per core, and keeps going after a crash, so one run can find
# several.
# Usage: scripts/fuzz.sh [SECONDS] (default 60), or scripts/fuzz.sh --build to
# build the targets only. The targets live in the ASan build (build-asan,
# scripts/lib.sh tiledbfs_configure_asan: clang, ASan+UBSan, Debug at -O1,
# the libraries instrumented for coverage), which scripts/test.sh --sanitize
# makes too: after it, nothing is left to build. Env: BUILD_DIR (build-asan),
# TARGETS (space-separated subset).
set -euo pipefail
BUILD_ONLY=0
[ "${1:-}" = --build ] && BUILD_ONLY=1 && shift
SECONDS_TOTAL=${1:-60}
TILEDBFS_ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROOT=$TILEDBFS_ROOT
source "$ROOT/scripts/lib.sh"
BUILD=${BUILD_DIR:-$ROOT/build-asan}

ALL=$(sed -n '/^set(TILEDBFS_FUZZ_TARGETS/,/)/p' "$ROOT/fuzz/CMakeLists.txt" |
      grep -o 'fuzz_[a-z_]*')
TARGETS=${TARGETS:-$ALL}
# Configured as the ASan build is, unless it already is (a reconfigure with
# other flags would rebuild everything).
if ! grep -q '^TILEDBFS_FUZZ_ENGINE:STRING=libfuzzer' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  tiledbfs_configure_asan "$BUILD"
fi
# shellcheck disable=SC2086
cmake --build "$BUILD" -j"$(nproc)" --target $TARGETS
[ "$BUILD_ONLY" = 1 ] && exit 0

n=$(echo $TARGETS | wc -w)
per=$(( SECONDS_TOTAL / n )); [ "$per" -lt 5 ] && per=5
failed=0
for t in $TARGETS; do
  work=$(mktemp -d)
  mkdir -p "$work/corpus" "$work/artifacts"
  regress="$ROOT/fuzz/regressions/$t"
  echo "== $t: ${per}s"
  set +e
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
    "$BUILD/bin/$t" -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 \
      -malloc_limit_mb=1024 -max_len=65536 -print_final_stats=1 \
      -fork="$(nproc)" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
      -artifact_prefix="$work/artifacts/" "$work/corpus" "$ROOT/fuzz/corpus/$t" \
      $( [ -d "$regress" ] && echo "$regress" ) >"$work/log" 2>&1
  rc=$?
  set -e
  # fork mode: the last "#<runs>: cov: ..." line has the total executions
  grep -E '^#[0-9]+: cov' "$work/log" | tail -1 | sed "s/^/  executions /" || true
  if ls "$work/artifacts/"* >/dev/null 2>&1; then
    mkdir -p "$regress"
    for a in "$work/artifacts/"*; do cp "$a" "$regress/"; echo "  FOUND: $regress/$(basename "$a")"; done
    mkdir -p "$BUILD/logs"; cp "$work/log" "$BUILD/logs/$t.log"
    grep -E 'runtime error|ERROR: |SUMMARY|^    #[0-9] ' "$work/log" | grep -v 'in fuzzer::' | head -40 | sed "s/^/  /" || true
    failed=1
  elif [ "$rc" -ne 0 ]; then
    echo "  $t exited $rc without an artifact:"; tail -20 "$work/log" | sed "s/^/  /"
    failed=1
  fi
  rm -rf "$work"
done
exit $failed
