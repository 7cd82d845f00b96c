#!/usr/bin/env bash
# Runs the diff comparison (diff_reference.py) on a fixture corpus, through
# the viewer or a real mount.
#   run.sh viewer|mount BIN_DIR CORPUS
set -euo pipefail
mode=$1 bin=$2 corpus=$3
here=$(cd "$(dirname "$0")" && pwd)
case "$mode" in
  viewer) exec python3 "$here/diff_reference.py" --viewer "$bin/tiledbfs-view" "$corpus" ;;
  mount)
    if [ ! -e /dev/fuse ]; then
      echo "SKIP: /dev/fuse is missing; mount tests need FUSE"
      exit 77
    fi
    exec python3 "$here/diff_reference.py" --mount "$bin/tiledbfs" "$corpus" ;;
  *) echo "usage: $0 viewer|mount BIN_DIR CORPUS" >&2; exit 2 ;;
esac
