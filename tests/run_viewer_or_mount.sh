#!/usr/bin/env bash
# Runs a comparison script (tests/slices/slice_conformance.py,
# tests/diffs/diff_reference.py) on a fixture corpus, through the viewer or a
# real mount.
#   run_viewer_or_mount.sh SCRIPT viewer|mount BIN_DIR CORPUS
set -euo pipefail
script=$1 mode=$2 bin=$3 corpus=$4
case "$mode" in
  viewer) exec python3 "$script" --viewer "$bin/tiledbfs-view" "$corpus" ;;
  mount)
    if [ ! -e /dev/fuse ]; then
      echo "SKIP: /dev/fuse is missing; mount tests need FUSE"
      exit 77
    fi
    exec python3 "$script" --mount "$bin/tiledbfs" "$corpus" ;;
  *) echo "usage: $0 SCRIPT viewer|mount BIN_DIR CORPUS" >&2; exit 2 ;;
esac
