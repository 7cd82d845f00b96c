#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest).
#   scripts/test.sh              release build in build/, every test
#   scripts/test.sh --quick       release build, the unit tests and one corpus pass
#                                through a mount (labels unit, quick): a few minutes
#   scripts/test.sh --sanitize   clang ASan+UBSan build in build-asan/ (also
#                                TILEDBFS_SANITIZE=1), with the fuzz targets; the
#                                unit tests and one corpus pass of each route
#   scripts/test.sh --tsan       ThreadSanitizer build in build-tsan/ of the unit
#                                tests that start threads only, and those tests
#   scripts/test.sh --all        release, ASan+UBSan and TSan, warnings as errors,
#                                the TSan build beside the others at nice 19 (what
#                                CI runs, .ci/run, with scripts/fuzz.sh 60)
# TILEDBFS_WERROR=ON|OFF overrides whether warnings are errors (ON with --all).
# Under the sanitizers every error ends the process that hit it (tests,
# tools and the FUSE daemon alike). ASan and LeakSanitizer reports go to
# build-asan/sanitizer-logs/ and any there fail the run (printed at the end),
# so that an error in a daemon whose stderr nobody reads is not lost; UBSan
# reports go to stderr.
set -euo pipefail
TILEDBFS_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$TILEDBFS_ROOT/scripts/lib.sh"

mode=release
[ "${TILEDBFS_SANITIZE:-0}" = 1 ] && mode=sanitize
case "${1:-}" in
  "") ;;
  --quick) mode=quick ;;
  --sanitize) mode=sanitize ;;
  --tsan) mode=tsan ;;
  --all) mode=all ;;
  -h | --help)
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "usage: scripts/test.sh [--quick | --sanitize | --tsan | --all]" >&2
    exit 2
    ;;
esac

werror=OFF
[ $mode = all ] && werror=ON
werror="-DTILEDBFS_WERROR=${TILEDBFS_WERROR:-$werror}"

tiledbfs_install_deps

# The mounts under test keep their persistent index in a folder of this
# run, never in the user's (~/.cache/tiledbfs): every run starts without.
XDG_CACHE_HOME=$(mktemp -d /tmp/tiledbfs-test-cache.XXXXXX)
export XDG_CACHE_HOME
trap 'rm -rf "$XDG_CACHE_HOME"' EXIT

# run_release [ctest args...]
run_release() {
  local dir="$TILEDBFS_ROOT/build" t0=$SECONDS
  tiledbfs_build "$dir" "$werror"
  local t1=$SECONDS
  (cd "$dir" && ctest --output-on-failure -j "$(nproc)" "$@")
  echo "test.sh: release build $((t1 - t0)) s, tests $((SECONDS - t1)) s (load: $(cut -d' ' -f1-3 /proc/loadavg))"
}

run_sanitize() {
  local dir="$TILEDBFS_ROOT/build-asan" t0=$SECONDS
  # clang, ASan+UBSan, the fuzz targets too (scripts/lib.sh tiledbfs_configure_asan).
  tiledbfs_configure_asan "$dir" "$werror"
  cmake --build "$dir" -j "$(nproc)"
  local t1=$SECONDS
  local logs="$dir/sanitizer-logs"
  rm -rf "$logs"
  mkdir -p "$logs"
  local rc=0
  (
    cd "$dir"
    export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:strict_string_checks=1:check_initialization_order=1:log_path=$logs/asan"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
    export LSAN_OPTIONS="log_path=$logs/lsan"
    # Every unit test and fuzz replay, and one corpus pass of each route (tests
    # labelled sanitize in tests/CMakeLists.txt); the release run has the rest.
    ctest --output-on-failure -j "$(nproc)" -L '^(unit|sanitize)$'
  ) || rc=$?
  # LeakSanitizer's "Unable to get registers from thread N." is no finding: a
  # thread it could not ptrace at exit (racy under load) has its whole stack
  # counted as reachable (compiler-rt lsan_common.cpp; newer LLVMs log it only
  # at verbosity 1). Any other line in the file still fails the run.
  local notice='^==[0-9]+==Unable to get registers from thread [0-9]+\.$' f reports=()
  for f in "$logs"/*; do
    [[ -e "$f" ]] || continue
    if grep -qvE "$notice" "$f"; then reports+=("$f"); fi
  done
  if ((${#reports[@]})); then
    echo "test.sh: sanitizer reports:" >&2
    for f in "${reports[@]}"; do
      echo "==== $f" >&2
      head -n 60 "$f" >&2
    done
    rc=1
  fi
  echo "test.sh: ASan+UBSan build $((t1 - t0)) s, tests $((SECONDS - t1)) s (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  return "$rc"
}

# The unit tests whose code starts threads, binary:gtest filter: the tile
# cache's decode-ahead, heap warming and partial decodes (RangeRead, PartialRead,
# ReleaseTiles), parallel decode (of tiles, and of one tile's chunks:
# UnfilterOnThreads), remote tiles read and decoded on many threads (ReadTiles,
# RemoteReadTiles), the HTTP client's connection turns, sparse windows built
# ahead, files rendered ahead (StreamedFile), the live root's refresh, readahead
# and the inode table. Only these binaries are built, without fuzz targets or tools.
# GeneratedArrayTest (multi-batch layouts of arrays tiledb-mkarray writes) is
# left out: over 4 minutes under TSan on 2 cores, for the code StreamedFileTest
# runs on the corpus.
TSAN_TESTS=(
  "core_read_tests:ParallelTest.*:HeapWarming.*:SparseWindowsTest.*:RangeReadTest.*:ReadTilesTest.*"
  "core_write_tests:PartialReadTest.*:UnfilterOnThreadsTest.*:UnfilterTileRangeTest.*:UnfilterChunkRecordsTest.*:ReleaseTilesTest.*:SparseWindowsWrittenTest.*:RemoteReadTilesTest.*"
  "core_s3_tests:HttpClientTest.*"
  "fusefs_tests:StreamedFileTest.*:RefreshTest.*:RefreshVacuumTest.*"
  "fusefs_fuse_tests:MountDevice.*:SetMountReadahead.*:InodeTable.*:Paths.*"
)

# The files those tests are in: only these are compiled (a third of those
# binaries' files; the TSan build is CI's longest path).
TSAN_FILES="parallel_test|heap_warming_test|sparse_windows_test|view_test|read_tiles_test"
TSAN_FILES+="|partial_decode_test|parallel_unfilter_test|release_tiles_test"
TSAN_FILES+="|sparse_windows_written_test|remote_read_tiles_test|http_client_test"
TSAN_FILES+="|streamed_file_test|streamed_file_corpus_test|refresh_test|readahead_test"
TSAN_FILES+="|inode_table_test"

# Without precompiled headers or unity batches: each file compiled on its own
# includes (so CI sees a missing #include), and GCC 12 under TSan warns falsely
# of std::string copies (-Warray-bounds, core/filters/compressors.cc) with them.
build_tsan() {
  local t targets=()
  for t in "${TSAN_TESTS[@]}"; do targets+=("${t%%:*}"); done
  cmake -S "$TILEDBFS_ROOT" -B "$TILEDBFS_ROOT/build-tsan" "$werror" -DTILEDBFS_TSAN=ON \
    "-DTILEDBFS_TEST_ONLY=$TSAN_FILES" \
    -DTILEDBFS_BUILD_FUZZ=OFF -DTILEDBFS_PCH=OFF -DTILEDBFS_UNITY=OFF -DCMAKE_BUILD_TYPE=Debug \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1" >/dev/null
  cmake --build "$TILEDBFS_ROOT/build-tsan" -j "$(nproc)" --target "${targets[@]}"
}

run_tsan() {
  local dir="$TILEDBFS_ROOT/build-tsan" t0=$SECONDS t
  build_tsan
  local t1=$SECONDS rc=0
  for t in "${TSAN_TESTS[@]}"; do
    # A suite missing from its binary (its file left out of TSAN_FILES)
    # would pass by running nothing.
    local suite filter=${t#*:}
    for suite in ${filter//:/ }; do
      if ! "$dir/tests/${t%%:*}" --gtest_list_tests "--gtest_filter=$suite" | grep -q '^  '; then
        echo "test.sh: TSan: ${t%%:*} has no test $suite (TSAN_FILES?)" >&2
        rc=1
      fi
    done
    echo "test.sh: TSan: ${t%%:*} --gtest_filter=${t#*:}"
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
      "$dir/tests/${t%%:*}" "--gtest_filter=${t#*:}" --gtest_brief=1 || rc=1
  done
  echo "test.sh: TSan build $((t1 - t0)) s, tests $((SECONDS - t1)) s (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  return "$rc"
}

case $mode in
  release) run_release ;;
  quick) run_release -L '^(unit|quick)$' ;;
  sanitize) run_sanitize ;;
  tsan) run_tsan ;;
  all)
    # The TSan build runs beside the release and ASan runs at nice 19: it takes
    # the core that their mount tests, run one at a time, leave idle (about
    # 740 s of the release run's 1107 s on a slow host).
    tsan_log=$(mktemp)
    (
      renice -n 19 -p "$BASHPID" >/dev/null
      t0=$SECONDS
      build_tsan
      echo "test.sh: TSan build (beside the others, nice 19) $((SECONDS - t0)) s"
    ) >"$tsan_log" 2>&1 &
    tsan_build=$!
    run_release
    run_sanitize
    if ! wait "$tsan_build"; then
      cat "$tsan_log"
      echo "test.sh: the TSan build failed" >&2
      exit 1
    fi
    tail -n 1 "$tsan_log"
    rm -f "$tsan_log"
    run_tsan
    ;;
esac
