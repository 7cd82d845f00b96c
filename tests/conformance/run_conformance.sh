#!/usr/bin/env bash
# Runs the conformance comparison (../shared/tools/conformance, mounting
# through tests/mount/mountlib.py) on
# the fixture corpus, through the viewer or a real mount.
#   run_conformance.sh viewer|mount BIN_DIR CORPUS
set -euo pipefail
mode=$1 bin=$2 corpus=$3
here=$(cd "$(dirname "$0")" && pwd)
case "$mode" in
  viewer) exec python3 "$here/conformance.py" --full --viewer "$bin/tiledbfs-view" "$corpus" ;;
  mount)
    if [ ! -e /dev/fuse ]; then
      echo "SKIP: /dev/fuse is missing; mount conformance needs FUSE"
      exit 77
    fi
    exec python3 "$here/conformance.py" --full --mount "$bin/tiledbfs" "$corpus" ;;
  *) echo "usage: $0 viewer|mount BIN_DIR CORPUS" >&2; exit 2 ;;
esac
