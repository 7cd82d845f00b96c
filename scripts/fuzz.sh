#!/usr/bin/env bash
# Runs every fuzz target (fuzz/) under libFuzzer for SECONDS in total (split
# evenly, at least 5 s each), starting from fuzz/corpus/<target>/ plus
# fuzz/regressions/<target>/. Any crash/timeout/OOM input is copied into
# fuzz/regressions/<target>/ and the script exits 1. libFuzzer runs in fork
# mode and keeps going after a crash, so one run can find several.
# Usage: scripts/fuzz.sh [SECONDS] (default 60), or scripts/fuzz.sh --build to
# install clang and build the targets only. Env: BUILD_DIR (build-fuzz), JOBS
# (2), TARGETS (space-separated subset).
# Needs clang++ and libFuzzer: apt-get install clang libclang-rt-14-dev
# (Debian bookworm; installed below when missing).
set -euo pipefail
BUILD_ONLY=0
[ "${1:-}" = --build ] && BUILD_ONLY=1 && shift
SECONDS_TOTAL=${1:-60}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-fuzz}
JOBS=${JOBS:-2}

have_libfuzzer() {
  command -v clang++ >/dev/null 2>&1 || return 1
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long){return 0;}' |
    clang++ -x c++ -fsanitize=fuzzer - -o /tmp/tiledbfs_fuzz_probe.$$ >/dev/null 2>&1
  local rc=$?
  rm -f /tmp/tiledbfs_fuzz_probe.$$
  return $rc
}
if ! have_libfuzzer; then
  echo "fuzz.sh: installing clang and libFuzzer (clang libclang-rt-14-dev)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq clang libclang-rt-14-dev
fi

SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# Debug keeps assertions; -O1 -g1 as in the ASan build (test.sh): CI's fuzz
# run lasts 60 s, and its build is on CI's path, where -O3 only slowed it.
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_FLAGS="$SAN" -DCMAKE_CXX_FLAGS="$SAN" \
  "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1" \
  -DTILEDBFS_FUZZ_ENGINE=libfuzzer -DTILEDBFS_BUILD_TESTS=OFF -DTILEDBFS_BUILD_FUSE=OFF \
  >/dev/null
ALL=$(sed -n '/^set(TILEDBFS_FUZZ_TARGETS/,/)/p' "$ROOT/fuzz/CMakeLists.txt" |
      grep -o 'fuzz_[a-z_]*')
TARGETS=${TARGETS:-$ALL}
# shellcheck disable=SC2086
cmake --build "$BUILD" -j"$JOBS" --target $TARGETS
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
      -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
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
