#!/usr/bin/env bash
# Runs a comparison script (tests/slices/slice_conformance.py,
# tests/diffs/diff_reference.py) on a fixture corpus, through the viewer or a
# real mount. ARGS go to the script (the viewer runs take a sample: a process
# per file costs 30 times a mount's read, and the mount runs check every case).
#   run_viewer_or_mount.sh SCRIPT viewer|mount BIN_DIR CORPUS [ARGS...]
set -euo pipefail
script=$1 mode=$2 bin=$3 corpus=$4
shift 4
case "$mode" in
  viewer) exec python3 "$script" --viewer "$bin/tiledbfs-view" "$@" "$corpus" ;;
  mount)
    if [ ! -e /dev/fuse ]; then
      echo "SKIP: /dev/fuse is missing; mount tests need FUSE"
      exit 77
    fi
    exec python3 "$script" --mount "$bin/tiledbfs" "$@" "$corpus" ;;
  *) echo "usage: $0 SCRIPT viewer|mount BIN_DIR CORPUS [ARGS...]" >&2; exit 2 ;;
esac
