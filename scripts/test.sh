#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest).
#   scripts/test.sh              release build in build/
#   scripts/test.sh --sanitize   ASan+UBSan build in build-asan/ (also: TILEDBFS_SANITIZE=1)
#   scripts/test.sh --all        both, one after the other (what CI runs)
# Under the sanitizers every error aborts the process that hit it (tests,
# tools and the FUSE daemon alike); reports go to build-asan/sanitizer-logs/
# and are printed at the end, so that an error in a daemon whose stderr
# nobody reads still fails the run.
set -euo pipefail
TILEDBFS_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$TILEDBFS_ROOT/scripts/lib.sh"

mode=release
[ "${TILEDBFS_SANITIZE:-0}" = 1 ] && mode=sanitize
case "${1:-}" in
  "") ;;
  --sanitize) mode=sanitize ;;
  --all) mode=all ;;
  -h | --help)
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "usage: scripts/test.sh [--sanitize | --all]" >&2
    exit 2
    ;;
esac

tiledbfs_install_deps

run_release() {
  local dir="$TILEDBFS_ROOT/build" t0=$SECONDS
  tiledbfs_build "$dir"
  (cd "$dir" && ctest --output-on-failure -j "$(nproc)")
  echo "test.sh: release build and tests in $((SECONDS - t0)) s"
}

run_sanitize() {
  local dir="$TILEDBFS_ROOT/build-asan" t0=$SECONDS
  # Debug keeps assertions; -O1 (as the sanitizers' manuals advise) runs the
  # suite several times faster than -O0; -g1 is enough for file:line in reports.
  tiledbfs_build "$dir" -DTILEDBFS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1"
  local logs="$dir/sanitizer-logs"
  rm -rf "$logs"
  mkdir -p "$logs"
  local rc=0
  (
    cd "$dir"
    export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:strict_string_checks=1:check_initialization_order=1:log_path=$logs/asan"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
    export LSAN_OPTIONS="log_path=$logs/lsan"
    ctest --output-on-failure -j "$(nproc)"
  ) || rc=$?
  if compgen -G "$logs/*" >/dev/null; then
    echo "test.sh: sanitizer reports:" >&2
    for f in "$logs"/*; do
      echo "==== $f" >&2
      head -n 60 "$f" >&2
    done
    rc=1
  fi
  echo "test.sh: ASan+UBSan build and tests in $((SECONDS - t0)) s"
  return "$rc"
}

case $mode in
  release) run_release ;;
  sanitize) run_sanitize ;;
  all)
    run_release
    run_sanitize
    ;;
esac
