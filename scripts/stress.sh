#!/usr/bin/env bash
# Runs every test that starts threads (tile cache, decode and heap warming ahead, sparse
# windows built ahead, parallel decode and layout passes, streamed files,
# refresh after writes, inode tables and listings under concurrent use,
# remote reads streamed over several connections)
# REPEATS times each, while two CPU hogs keep the cores busy, to find tests
# that depend on thread scheduling or timing (issue 41). Each test binary
# runs its threaded tests with --gtest_repeat (a process per repeat, as
# ctest --repeat would start, costs more than most of these tests), the
# binaries side by side, one per core.
#   scripts/stress.sh [REPEATS] [BUILD_DIR]   (default 200, build/)
#   STRESS_FILTER=PATTERN  another --gtest_filter selection
#   STRESS_EXCLUDE=PATTERN leave these out (gtest patterns joined by ':')
#   STRESS_BINARIES=NAMES  only these test binaries (e.g. "fusefs_tests")
#   STRESS_SHARDS=N        each binary as N processes side by side, each of
#                          REPEATS/N repeats (rounded up), up to N processes
#                          at once (else one per core): fusefs_tests alone
#                          takes the longest, and one process of it, often
#                          waiting on its own threads, gets a fifth of a core
#                          beside the hogs
#   STRESS_MOUNTS=N        also the mount tests, N times each through ctest
#                          (minutes a run)
# The hogs are killed however the script ends. Prints what ran and, per
# binary, the iterations that failed; exits 1 if any did.
set -euo pipefail
TILEDBFS_ROOT=$(cd "$(dirname "$0")/.." && pwd)
repeats=${1:-200}
build=$(cd "${2:-$TILEDBFS_ROOT/build}" && pwd)
suites=(PartialReadTest UnfilterOnThreadsTest ReleaseTilesTest HeapWarming SparseWindowsWrittenTest
  SparseWindowsTest ParallelTest StreamedFileTest GeneratedArrayTest TreeTest RefreshTest
  RefreshVacuumTest InodeTable Listings KernelCache FuseAdapter ManyFragmentsReadTest DuplicateCellsTest RangeReadTest StoredOrderTest
  StoredCellsTest StreamTest ArrayWriteTest CorpusFragments DamagedArrayTest GroupMemberViewTest
  LocalStorageTest ReadTilesTest RemoteReadTilesTest HttpClientTest)
filter=${STRESS_FILTER:-$(printf '%s.*:' "${suites[@]}")}
[ -n "${STRESS_EXCLUDE:-}" ] && filter="$filter-$STRESS_EXCLUDE"
shards=${STRESS_SHARDS:-1}
per_shard=$(((repeats + shards - 1) / shards))

binaries=()
if [ -n "${STRESS_BINARIES:-}" ]; then
  for b in $STRESS_BINARIES; do
    [ -x "$build/tests/$b" ] || { echo "stress.sh: no test binary $build/tests/$b" >&2; exit 2; }
    binaries+=("$build/tests/$b")
  done
else
  mapfile -t binaries < <(find "$build/tests" -maxdepth 1 -name '*_tests' -type f -perm -u+x | sort)
fi

hogs=()
stop_hogs() {
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${hogs[@]}"; do wait "$pid" 2>/dev/null || true; done
  hogs=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM
for _ in 1 2; do
  yes >/dev/null &
  hogs+=($!)
done
echo "stress.sh: CPU hogs ${hogs[*]}; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "stress.sh: each of ${binaries[*]##*/} --gtest_filter='$filter'" \
  "--gtest_repeat=$per_shard, $shards process(es) each"

logs=$build/stress
rm -rf "$logs"
mkdir -p "$logs"
t0=$SECONDS
# One process per core at a time, or the shards of a binary side by side; a
# process's status is in its log's last line.
at_once=$(nproc)
[ "$shards" -gt "$at_once" ] && at_once=$shards
for b in "${binaries[@]}"; do
  for ((s = 1; s <= shards; s++)); do echo "$b $s"; done
done |
  xargs -P "$at_once" -L1 bash -c '
    # $5: the binary, $6: its shard (appended by xargs)
    log="$1/$(basename "$5")$([ "$3" -gt 1 ] && echo ".$6").log"
    "$5" --gtest_filter="$2" --gtest_repeat="$4" >"$log" 2>&1
    echo "exit $?" >>"$log"' _ "$logs" "$filter" "$shards" "$per_shard"
rc=0
for log in "$logs"/*.log; do
  ran=$(grep -c '^\[==========\] .* ran\.' "$log" || true)
  failed=$(grep -c '^\[  FAILED  \] .*(.* ms)$' "$log" || true)
  status=$(tail -n 1 "$log")
  # Binaries with none of the tests selected (0 tests ran) are not listed.
  if grep -q '^\[==========\] 0 tests from' "$log" && [ "$status" = "exit 0" ]; then continue; fi
  tests=$(grep -m1 -o '^\[==========\] [0-9]* tests\?' "$log" | grep -o '[0-9]*' || true)
  echo "  $(basename "$log" .log): $tests tests x $ran iterations, $failed failed test runs, $status"
  if [ "$failed" -gt 0 ] || [ "$status" != "exit 0" ]; then
    rc=1
    { grep '^\[  FAILED  \] .*(.* ms)$' "$log" || true; } | sort | uniq -c | sed 's/^/    /'
  fi
done
echo "stress.sh: $((SECONDS - t0)) s, exit $rc (logs: $logs/)"
if [ "${STRESS_MOUNTS:-0}" -gt 0 ]; then
  cmd=(ctest --test-dir "$build" -R '^mount_' --repeat "until-fail:$STRESS_MOUNTS"
    --output-on-failure)
  echo "stress.sh: ${cmd[*]}"
  "${cmd[@]}" >"$logs/mounts.log" 2>&1 || rc=1
  grep -E "tests passed|tests failed|\*\*\*Failed|\*\*\*Timeout" "$logs/mounts.log" || true
fi
exit "$rc"
