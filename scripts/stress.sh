#!/usr/bin/env bash
# Runs every test that starts threads (tile cache and decode ahead, sparse
# windows built ahead, parallel decode and layout passes, streamed files,
# refresh and the watcher's rechecks, inode tables and listings under
# concurrent use) REPEATS times each, while two CPU hogs keep the cores
# busy, to find tests that depend on thread scheduling or timing (issue 41).
#   scripts/stress.sh [REPEATS] [BUILD_DIR]   (default 200, build/)
#   STRESS_TESTS=REGEX   another ctest -R selection
#   STRESS_EXCLUDE=REGEX ctest -E: leave these out
#   STRESS_MOUNTS=N      also the mount tests, N times each (minutes a run)
# The hogs are killed however the script ends. Prints the ctest command and
# its summary; exits with ctest's status.
set -euo pipefail
TILEDBFS_ROOT=$(cd "$(dirname "$0")/.." && pwd)
repeats=${1:-200}
build=${2:-$TILEDBFS_ROOT/build}
threaded='^(PartialReadTest|ReleaseTilesTest|SparseWindowsWrittenTest|SparseWindowsTest|ParallelTest|StreamedFileTest|GeneratedArrayTest|TreeTest|RefreshTest|RefreshVacuumTest|InodeTable|Listings|KernelCache|FuseAdapter|ManyFragmentsReadTest|DuplicateCellsTest|RangeReadTest|StoredOrderTest|StoredCellsTest|StreamTest|ArrayWriteTest|CorpusFragments|DamagedArrayTest|GroupMemberViewTest|LocalStorageTest)\.'
tests=${STRESS_TESTS:-$threaded}

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

rc=0
cmd=(ctest --test-dir "$build" -R "$tests" --repeat "until-fail:$repeats" -j "$(nproc)"
  --output-on-failure --timeout 600)
[ -n "${STRESS_EXCLUDE:-}" ] && cmd+=(-E "$STRESS_EXCLUDE")
echo "stress.sh: ${cmd[*]}"
t0=$SECONDS
"${cmd[@]}" >"$build/stress.log" 2>&1 || rc=$?
grep -E "tests passed|tests failed|\*\*\*Failed|\*\*\*Timeout|Exception" "$build/stress.log" || true
echo "stress.sh: $((SECONDS - t0)) s, exit $rc (full log: $build/stress.log)"
if [ "${STRESS_MOUNTS:-0}" -gt 0 ]; then
  cmd=(ctest --test-dir "$build" -R '^mount_' --repeat "until-fail:$STRESS_MOUNTS"
    --output-on-failure)
  echo "stress.sh: ${cmd[*]}"
  "${cmd[@]}" >"$build/stress-mounts.log" 2>&1 || rc=$?
  grep -E "tests passed|tests failed|\*\*\*Failed|\*\*\*Timeout" "$build/stress-mounts.log" || true
fi
exit "$rc"
