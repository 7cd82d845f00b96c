#!/usr/bin/env bash
# Installs what is missing, builds, and mounts the bundled example array.
#   scripts/run.sh [MOUNTPOINT] [ARRAY]     (default: ./mnt and a corpus array)
set -euo pipefail
TILEDBFS_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$TILEDBFS_ROOT/scripts/lib.sh"
tiledbfs_install_deps
tiledbfs_build "$TILEDBFS_ROOT/build"
mnt=${1:-$TILEDBFS_ROOT/mnt}
array=${2:-$TILEDBFS_ROOT/tests/data/corpus/arrays/dense_2d_fragments}
mkdir -p "$mnt"
if mountpoint -q "$mnt"; then fusermount3 -u "$mnt" || umount "$mnt"; fi
"$TILEDBFS_ROOT/build/bin/tiledbfs" "$array" "$mnt"
# The python3 that imports numpy (python3-numpy goes to Debian's, which another
# python3 earlier in PATH, a pyenv one say, does not see).
py=python3
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy' >/dev/null 2>&1; then py=$p; break; fi
done
cat <<TXT
Mounted $array at $mnt (read-only). Try:
  ls $mnt $mnt/attributes $mnt/history
  cat $mnt/data.csv
  $py -c "import numpy as np; print(np.load('$mnt/attributes/a.npy'))"
  jq .cell_count $mnt/fragments/*/fragment.json
  diff $mnt/history/2023-11-14T22:13:21.000Z/data.csv $mnt/data.csv
  cat $mnt/log.txt
Unmount with: fusermount3 -u $mnt
TXT
