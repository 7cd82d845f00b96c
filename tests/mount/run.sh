#!/usr/bin/env bash
# Runs one mount test (a python3 script beside this file) with a python3
# that can import numpy and pandas if one is installed (Debian:
# python3-numpy python3-pandas), else with plain python3 (the tests then
# note which checks they could not run). TILEDBFS_NO_MOUNT=1: the script
# mounts nothing (it reads through tiledbfs-view), so /dev/fuse is not needed.
#   run.sh SCRIPT.py ARGS...
set -u
here=$(cd "$(dirname "$0")" && pwd)
script=$1
shift
if [ ! -e /dev/fuse ] && [ "${TILEDBFS_NO_MOUNT:-0}" != 1 ]; then
  echo "SKIP: /dev/fuse is missing; mount tests need FUSE"
  exit 77
fi
for py in python3 /usr/bin/python3 /usr/local/bin/python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import numpy, pandas' >/dev/null 2>&1; then
    exec "$py" "$here/$script" "$@"
  fi
done
exec python3 "$here/$script" "$@"
