#!/usr/bin/env bash
# Benchmarks of issue 5: targets 1-3 on array (a), 4 on arrays (c), 5 on array (b), every
# figure beside its baseline or target measured in the same run.
#   scripts/bench.sh [DIR]
# DIR holds the arrays of scripts/make-bench-arrays.sh (made there if missing, at
# BENCH_SCALE MiB, default 1024; targets 4 and 5 are skipped when their arrays are
# missing). Environment:
#   BENCH_SCALE=MiB     size of the arrays made when missing (multiple of 32)
#   BENCH_RUNS=N        hyperfine runs per command (default 5)
#   BENCH_CACHE=SIZE    -o cache_size of the RSS benchmark (default 256M)
#   BENCH_RSS_TIMEOUT=S bound on each reader of the RSS benchmark (default 120)
#   TILEDBFS_BUILD=DIR  a build to use as it is (default: build-release/, built here in
#                       Release mode)
#   BENCH_TARGETS="4 5" the targets to run (default 1 2 3 4 5 6 7 8 10 11; 1-3 run together,
#                       as 2 and 3 take their baselines from 1's array; 6: slices, 7: diffs;
#                       8: arrays on S3, scripts/bench_s3.py and bench_s3_index.py: s3rver behind
#                       our proxy at 10 ms;
#                       9, opt-in: scale, 200M-cell arrays, BENCH_SCALE9 MiB, see (9);
#                       10: data.parquet, scripts/bench_parquet.py;
#                       11: an append with the persistent index, scripts/bench_index_append.py)
# Needs /dev/fuse. Installs hyperfine and zstd with apt when missing. Uses TileDB's own
# reader (../shared/oracle) when present, for comparison only.
set -euo pipefail
TILEDBFS_ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$TILEDBFS_ROOT/scripts/lib.sh"
dir=${1:-/tmp/tiledbfs-bench}
scale=${BENCH_SCALE:-1024}
runs=${BENCH_RUNS:-5}
rss_cache=${BENCH_CACHE:-256M}
targets=${BENCH_TARGETS:-1 2 3 4 5 6 7 8 10 11}
want() {  # true if any of the targets given is asked for
  local t
  for t in "$@"; do [[ " $targets " == *" $t "* ]] && return 0; done
  return 1
}

need=()
command -v hyperfine >/dev/null || need+=(hyperfine)
command -v zstd >/dev/null || need+=(zstd)
command -v fusermount3 >/dev/null || need+=(fuse3)
command -v python3 >/dev/null || need+=(python3)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ -n "${TILEDBFS_BUILD:-}" ]; then
  build=$TILEDBFS_BUILD
else
  tiledbfs_install_deps
  build=$TILEDBFS_ROOT/build-release
  tiledbfs_build "$build" -DCMAKE_BUILD_TYPE=Release
fi
bin=$build/bin
for t in tiledbfs tiledbfs-view tiledb-mkarray; do
  [ -x "$bin/$t" ] || { echo "bench: $bin/$t missing" >&2; exit 1; }
done
if [ ! -d "$dir/dense1" ] || [ ! -d "$dir/dense16" ]; then
  TILEDBFS_BUILD=$build "$TILEDBFS_ROOT/scripts/make-bench-arrays.sh" "$dir" "$scale"
fi

work=$(mktemp -d /tmp/tiledbfs-bench.XXXXXX)
mnt=$work/mnt
mkdir -p "$mnt"
daemon_pid=""

# Unmounts MNT (bounded wait) and reaps the -f daemon we started, if any.
unmount() {
  local m=$1
  if mountpoint -q "$m"; then
    for _ in $(seq 50); do
      fusermount3 -u "$m" 2>/dev/null && break
      sleep 0.2
    done
    if mountpoint -q "$m"; then fusermount3 -uz "$m" 2>/dev/null || true; fi
  fi
  if [ -n "$daemon_pid" ]; then
    for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
    kill "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
    daemon_pid=""
  fi
}
cleanup() {
  unmount "$mnt"
  rm -rf "$work"
}
trap cleanup EXIT

# Every mount here runs without the persistent index (-o index=off): the
# figures are of the first look, whatever earlier runs left in the user's
# index. The tools are reached through a folder of this run whose
# tiledbfs adds the option.
mkdir -p "$work/bin"
for f in "$bin"/*; do ln -s "$f" "$work/bin/"; done
rm "$work/bin/tiledbfs"
printf '#!/bin/sh\nexec %q -o index=off "$@"\n' "$bin/tiledbfs" >"$work/bin/tiledbfs"
chmod +x "$work/bin/tiledbfs"
bin=$work/bin

# Mounts ARRAY at $mnt in the foreground, in the background of this shell (pid known).
mount_fg() {
  local array=$1
  shift
  "$bin/tiledbfs" -f "$@" "$array" "$mnt" 2>>"$work/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 100); do
    mountpoint -q "$mnt" && return 0
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "bench: could not mount $array" >&2
  cat "$work/daemon.log" >&2
  exit 1
}

hf_mean() {  # JSON INDEX -> "mean stddev"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][int(sys.argv[2])];
print(r['mean'], r['stddev'] or 0)" "$1" "$2"
}
ratio() { python3 -c "import sys; print(f'{float(sys.argv[1])/float(sys.argv[2]):.2f}')" "$1" "$2"; }
ms() { python3 -c "import sys; print(f'{float(sys.argv[1])*1e3:.1f}')" "$1"; }
# Drops a file's pages from the page cache (targets 1 and 5 read it again through FUSE).
drop="python3 -c \"import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)\""

if want 1 2 3; then
array=$dir/dense1
bytes=$("$bin/tiledbfs-view" "$array" attributes/a.bin | wc -c)
mib=$(python3 -c "print(f'{$bytes/1048576:.0f}')")
tiles=$(find "$array/__fragments" -name 'a*.tdb' -exec python3 - {} \; <<'PY'
import struct, sys
# Counts the tiles of a fixed attribute file (tile = u64 chunk count + chunks).
d = open(sys.argv[1], 'rb').read(); p = n = 0
while p < len(d):
    (k,) = struct.unpack_from('<Q', d, p); p += 8; n += 1
    for _ in range(k):
        o, f, m = struct.unpack_from('<III', d, p); p += 12 + m + f
print(n)
PY
)

fi

echo "== tiledbfs benchmarks (issue 5), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
  "$(free -g | awk '/Mem:/{print $2}') GiB RAM; kernel $(uname -r)"
# The host's own speed, so that runs on different days can be compared: the same
# binary's one-core data.csv has taken 5.3 s and 2.0 s on two days (BENCHMARKS.md,
# session 31).
yardstick=$(taskset -c 0 zstd -b3 -i1 2>&1 | tr '\r' '\n' | grep 'MB/s.*MB/s' | tail -1 |
  grep -o '[0-9.]* MB/s' | paste -sd' ' || true)
memory=$(taskset -c 0 dd if=/dev/zero of=/dev/null bs=64M count=64 2>&1 | tail -1 |
  grep -o '[0-9.]* [GM]B/s' || true)
echo "host yardstick, one core: zstd -b3 (its synthetic 10 MB) compress, decompress" \
  "${yardstick:-?}; memory writes (dd of /dev/zero, 64 MiB blocks) ${memory:-?}"
echo "targets: $targets; $runs runs each"
echo

if want 1 2 3; then
echo "array: $array: attributes/a.bin = $bytes bytes ($mib MiB), $tiles tiles"
echo

# ---- (1) sequential read of attributes/a.bin -------------------------------------------
# The compressed bytes: every chunk's filtered data is the ZSTD frames of the byteshuffle
# metadata part and of the shuffled data part, so all chunks of all tiles concatenated are
# one multi-frame zstd stream of the same compressed bytes the reader decodes.
frag_file=$(find "$array/__fragments" -name 'a*.tdb' | head -1)
python3 - "$frag_file" "$work/a.zst" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read(); out = open(sys.argv[2], 'wb'); p = 0
while p < len(d):
    (k,) = struct.unpack_from('<Q', d, p); p += 8
    for _ in range(k):
        o, f, m = struct.unpack_from('<III', d, p); p += 12 + m
        out.write(d[p:p + f]); p += f
PY
zstd -d -c "$work/a.zst" | wc -c >"$work/zstd.bytes"

oracle=""
if [ -x "${TILEDBFS_ORACLE:-$TILEDBFS_ROOT/../shared/oracle}/bin/reftime" ]; then
  oracle=${TILEDBFS_ORACLE:-$TILEDBFS_ROOT/../shared/oracle}
  # A private folder of the oracle's libraries (lib.sh), removed at exit.
  tiledbfs_oracle_libs "$oracle" "$work/oracle-lib"
fi

# hyperfine -N runs each command without a shell, its stdout to /dev/null.
cmds=(
  "cat $mnt/attributes/a.bin"
  "$bin/tiledbfs-view $array attributes/a.bin"
  "zstd -q -d -c $work/a.zst"
)
# Cold: a fresh mount for every run (empty tile cache, nothing in the kernel's cache), by
# default (the first open streams past the page cache, where the kernel allows it) and
# with -o page_cache (every open through the page cache, as kernels before 6.6 read).
hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$work/cold.json" \
  --prepare "bash -c 'fusermount3 -u $mnt 2>/dev/null; $bin/tiledbfs $array $mnt'" \
  --prepare "bash -c 'fusermount3 -u $mnt 2>/dev/null; $bin/tiledbfs -o page_cache $array $mnt'" \
  -n stream "${cmds[0]}" -n page_cache "${cmds[0]}" >/dev/null
fusermount3 -u "$mnt" 2>/dev/null || true
# Warm: one mount for all runs. The root's a.bin reads the same snapshot at every open, so
# the kernel keeps its pages (keep_cache) from the second open on: these runs mostly do not
# reach the daemon.
mount_fg "$array"
hyperfine -N --style none --warmup 2 --runs "$runs" --export-json "$work/seq.json" \
  "${cmds[@]}" >/dev/null
unmount "$mnt"
read -r cold cold_sd < <(hf_mean "$work/cold.json" 0)
read -r cold_pc cold_pc_sd < <(hf_mean "$work/cold.json" 1)
read -r warm warm_sd < <(hf_mean "$work/seq.json" 0)
read -r view view_sd < <(hf_mean "$work/seq.json" 1)
read -r zst zst_sd < <(hf_mean "$work/seq.json" 2)
ref=""
if [ -n "$oracle" ]; then
  hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$work/ref.json" \
    "env LD_LIBRARY_PATH=$work/oracle-lib $oracle/bin/reftime $array a" >/dev/null
  read -r ref ref_sd < <(hf_mean "$work/ref.json" 0)
  ref_inner=$(LD_LIBRARY_PATH=$work/oracle-lib "$oracle/bin/reftime" "$array" a)
fi
mbs() { python3 -c "import sys; print(f'{$bytes/float(sys.argv[1])/1048576:.0f}')" "$1"; }
echo "(1) cat attributes/a.bin > /dev/null ($mib MiB)              time ms   MiB/s   ratio"
printf '    mount, fresh mount per run (cold)          %8s %7s   %s x in-process (target <= 1.25)\n' \
  "$(ms "$cold")" "$(mbs "$cold")" "$(ratio "$cold" "$view")"
printf '    the same with -o page_cache                %8s %7s   %s x in-process\n' \
  "$(ms "$cold_pc")" "$(mbs "$cold_pc")" "$(ratio "$cold_pc" "$view")"
printf '    mount, same mount (kernel page cache kept) %8s %7s   %s x in-process\n' \
  "$(ms "$warm")" "$(mbs "$warm")" "$(ratio "$warm" "$view")"
printf '    in-process: tiledbfs-view (no FUSE)        %8s %7s   %s x zstd -d (target <= 1.5)\n' \
  "$(ms "$view")" "$(mbs "$view")" "$(ratio "$view" "$zst")"
printf '    zstd -d of the same frames (%s B out)  %8s %7s   baseline\n' \
  "$(cat "$work/zstd.bytes")" "$(ms "$zst")" "$(mbs "$zst")"
if [ -n "$ref" ]; then
  printf '    TileDB 2.30 reftime (process)              %8s %7s   mount cold = %s x TileDB (aim < 1)\n' \
    "$(ms "$ref")" "$(mbs "$ref")" "$(ratio "$cold" "$ref")"
  echo "    TileDB 2.30 reftime's own read timing: $ref_inner (bytes seconds); stddev $(ms "$ref_sd") ms"
else
  echo "    TileDB 2.30: ../shared/oracle not present, not measured"
fi
echo "    (stddev ms: cold $(ms "$cold_sd"), page_cache $(ms "$cold_pc_sd"), warm $(ms "$warm_sd")," \
  "view $(ms "$view_sd"), zstd $(ms "$zst_sd"))"

# What FUSE itself costs on this machine for the same bytes, and the bound it puts on
# target 1: the mount's CPU is at least the in-process decode's plus FUSE's, on nproc
# cores. Two paths: through the page cache (cat, the file's pages dropped before each run,
# fadvise DONTNEED, so that cat reaches the daemon) and direct (dd iflag=direct bs=1M: the
# path of a streamed first open, every 1 MiB request straight into the reader's buffer).
# Daemon CPU: utime + stime over the runs (warm-up included).
#  - served: a mount with every tile of a.bin decoded in its cache (cache_size above the
#    file, one read before): finding the tiles, their pieces, the kernel's copies.
#  - floor: tiledbfs_fake_mount's big.bin of the same size, one piece per 1 MiB request
#    from one buffer in memory: nothing but FUSE, through the same adapter.
cpu_of() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }
sys_of() { awk '{print $15 / 100}' "/proc/$1/stat"; }
# FILE JSON PATH: hyperfine of reading FILE (PATH: cached or direct); prints "wall cpu
# kernel" per run (cpu: daemon + reader; kernel: the daemon's system time + the reader's
# CPU, the part that only FUSE costs).
fuse_cost() {
  local c0 c1 k0 k1
  c0=$(cpu_of "$daemon_pid")
  k0=$(sys_of "$daemon_pid")
  if [ "$3" = direct ]; then
    hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$2" \
      "dd if=$1 of=/dev/null bs=1M iflag=direct status=none" >/dev/null
  else
    hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$2" \
      --prepare "bash -c '$drop $1'" "cat $1" >/dev/null
  fi
  c1=$(cpu_of "$daemon_pid")
  k1=$(sys_of "$daemon_pid")
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0];
n = len(r['times']) + 1; cat = r['user'] + r['system']
print(r['mean'], (float(sys.argv[3]) - float(sys.argv[2])) / n + cat,
      (float(sys.argv[5]) - float(sys.argv[4])) / n + cat)" \
    "$2" "$c0" "$c1" "$k0" "$k1"
}
read -r view_cpu < <(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][1];
print(r['user'] + r['system'])" "$work/seq.json")
bound() {  # CPU -> the bound in seconds: in-process CPU + CPU, spread over every core
  python3 -c "import sys; print((float(sys.argv[1]) + float(sys.argv[2])) / $(nproc))" "$view_cpu" "$1"
}
mount_fg "$array" -o cache_size=$((bytes * 2 / 1048576 + 64))M
cat "$mnt/attributes/a.bin" >/dev/null
read -r served served_cpu served_kernel < <(fuse_cost "$mnt/attributes/a.bin" "$work/served.json" cached)
read -r dserved dserved_cpu dserved_kernel < <(fuse_cost "$mnt/attributes/a.bin" "$work/dserved.json" direct)
unmount "$mnt"
fake=$build/tests/tiledbfs_fake_mount
floor=""
if [ -x "$fake" ]; then
  "$fake" -f --big-bytes "$bytes" --big-piece 1048576 "$mnt" 2>>"$work/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
  read -r floor floor_cpu _ < <(fuse_cost "$mnt/big.bin" "$work/floor.json" cached)
  read -r dfloor dfloor_cpu _ < <(fuse_cost "$mnt/big.bin" "$work/dfloor.json" direct)
  unmount "$mnt"
fi
echo "    what FUSE costs here (CPU = daemon + reader; cat through the page cache, dd direct):"
cost_row() {  # LABEL TIME CPU
  printf '    %-42s %8s %7s   CPU %s ms; bound %s x in-process\n' "$1" "$(ms "$2")" "$(mbs "$2")" \
    "$(ms "$3")" "$(ratio "$(bound "$3")" "$view")"
}
cost_row "mount, every tile in its cache: cat" "$served" "$served_cpu"
printf '      of which the kernel (daemon system + cat)               CPU %s ms; bound %s x in-process\n' \
  "$(ms "$served_kernel")" "$(ratio "$(bound "$served_kernel")" "$view")"
cost_row "mount, every tile in its cache: direct" "$dserved" "$dserved_cpu"
printf '      of which the kernel (daemon system + dd)                CPU %s ms; bound %s x in-process\n' \
  "$(ms "$dserved_kernel")" "$(ratio "$(bound "$dserved_kernel")" "$view")"
if [ -n "$floor" ]; then
  cost_row "FUSE floor, bytes from memory: cat" "$floor" "$floor_cpu"
  cost_row "FUSE floor, bytes from memory: direct" "$dfloor" "$dfloor_cpu"
else
  echo "    FUSE floor: $fake not built, not measured"
fi
echo "    (bound: (in-process CPU $(ms "$view_cpu") ms + that CPU) / $(nproc) cores: the least time"
echo "     a cold mount can take if both run at once on every core with nothing idle. Serving's"
echo "     whole CPU counts the gather's per-run work twice (the in-process read does it too) and"
echo "     copies tiles decoded long before: its bound overstates; the kernel's part does not)"
echo

# ---- (2) random 4 KiB preads vs one tile decode -----------------------------------------
# A tile cache of 1 MiB holds at most one tile: nearly every read decodes its tile(s).
tile_ms=$(python3 -c "print(f'{$view*1e3/$tiles:.2f}')")
cat >"$work/pread.py" <<'PY'
import os, random, statistics, sys, time
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDONLY)
size = os.fstat(fd).st_size
rng = random.Random(5)
lat = []
for _ in range(n):
    off = rng.randrange(0, size - 4096)
    t = time.perf_counter(); b = os.pread(fd, 4096, off); lat.append(time.perf_counter() - t)
    assert len(b) == 4096
os.close(fd)
lat.sort()
print(statistics.median(lat) * 1e3, lat[int(0.9 * n)] * 1e3, lat[-1] * 1e3)
PY
mount_fg "$array" -o cache_size=1M
read -r p50 p90 pmax < <(python3 "$work/pread.py" "$mnt/attributes/a.bin" 200)
unmount "$mnt"
mount_fg "$array"
python3 "$work/pread.py" "$mnt/attributes/a.bin" 200 >/dev/null
read -r w50 w90 wmax < <(python3 "$work/pread.py" "$mnt/attributes/a.bin" 200)
unmount "$mnt"
echo "(2) 200 random 4 KiB preads of attributes/a.bin          median    p90     max   ratio"
printf '    mount, -o cache_size=1M (decodes per read) %7.2f %7.2f %7.2f   %s x one tile decode (target <= 1.5)\n' \
  "$p50" "$p90" "$pmax" "$(ratio "$p50" "$tile_ms")"
printf '    mount, default cache, offsets read before  %7.2f %7.2f %7.2f   %s x one tile decode\n' \
  "$w50" "$w90" "$wmax" "$(ratio "$w50" "$tile_ms")"
printf '    one tile decode = in-process time / tiles  %7s ms                 baseline\n' "$tile_ms"
echo

# ---- (3) daemon peak RSS, 8 readers at once ----------------------------------------------
# Eight different files of one mount of dense16: the latest attributes/a.bin and a.bin of
# the 7 latest history views (each a different overlay of the 16 fragments).
array16=$dir/dense16
mount_fg "$array16" -o cache_size="$rss_cache"
files=("$mnt/attributes/a.bin")
while read -r h; do files+=("$mnt/history/$h/attributes/a.bin"); done < <(ls "$mnt/history" | sort | tail -8 | head -7)
base_rss=$(awk '/VmRSS/{print $2}' /proc/$daemon_pid/status)
t0=$(date +%s.%N)
pids=()
# Bounded: a reader still running after BENCH_RSS_TIMEOUT s (default 120) is stopped.
for f in "${files[@]}"; do timeout "${BENCH_RSS_TIMEOUT:-120}" cat "$f" >/dev/null & pids+=($!); done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
t1=$(date +%s.%N)
hwm=$(awk '/VmHWM/{print $2}' /proc/$daemon_pid/status)
unmount "$mnt"
[ $fail -eq 0 ] || echo "    WARNING: a reader failed or timed out (${BENCH_RSS_TIMEOUT:-120} s)"
cache_kib=$(python3 -c "
s='$rss_cache'; m={'K':1,'M':1024,'G':1024**2,'T':1024**3}
print(int(float(s[:-1])*m[s[-1].upper()]) if s[-1].upper() in m else int(s)//1024)")
limit_kib=$((cache_kib + 64 * 1024))
echo "(3) daemon peak RSS, 8 readers cat 8 different $mib MiB files of dense16 at once"
printf '    VmHWM %d MiB (idle after mount %d MiB); %.2f s for %d MiB   %s x (cache_size %s + 64 MiB = %d MiB, target <= 1)\n' \
  $((hwm / 1024)) $((base_rss / 1024)) "$(python3 -c "print($t1-$t0)")" $((8 * mib)) \
  "$(ratio "$hwm" "$limit_kib")" "$rss_cache" $((limit_kib / 1024))
echo

fi

# ---- (4) many fragments: mount and list ---------------------------------------------------
# Array (c): 10,000 small sparse fragments, with __fragment_meta/ (frags10k_meta) and
# without (frags10k). A fresh mount per run: mount + `ls -l` of the root and of history/
# (one folder per instant); then, on a fresh mount, `find -maxdepth 3` (every history/<T>/
# and fragments/<name>/ folder listed) per entry listed. A warm-up run first, as for
# target 1: the 8 GiB read by target 3 may have pushed the array's 40,000 files out of the
# kernel's page cache, and a disk read is not what this target measures.
if want 4; then
echo "(4) 10,000 fragments: mount + ls -l MNT MNT/history; find MNT -maxdepth 3"
for name in frags10k_meta frags10k; do
  array=$dir/$name
  if [ "$name" = frags10k_meta ]; then target=0.5; else target=3; fi
  if [ ! -d "$array" ]; then
    echo "    $name: SKIPPED, $array missing (scripts/make-bench-arrays.sh makes it)"
    continue
  fi
  hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$work/t4.json" \
    --prepare "bash -c 'fusermount3 -u $mnt 2>/dev/null; true'" \
    "bash -c '$bin/tiledbfs $array $mnt && ls -l $mnt $mnt/history >/dev/null'" >/dev/null
  fusermount3 -u "$mnt" 2>/dev/null || true
  read -r t4 t4_sd < <(hf_mean "$work/t4.json" 0)
  # find on a fresh mount per run (its lookups are the first), like mount + ls -l above.
  hyperfine -N --style none --runs "$runs" --export-json "$work/t4find.json" \
    --prepare "bash -c 'fusermount3 -u $mnt 2>/dev/null; $bin/tiledbfs $array $mnt'" \
    "find $mnt -maxdepth 3" >/dev/null
  fusermount3 -u "$mnt" 2>/dev/null || true
  read -r tf tf_sd < <(hf_mean "$work/t4find.json" 0)
  mount_fg "$array"
  entries=$(find "$mnt" -maxdepth 3 | wc -l)
  unmount "$mnt"
  frags=$(find "$array/__fragments" -mindepth 1 -maxdepth 1 | wc -l)
  printf '    %-14s %5d fragments: mount + ls -l %8s ms (sd %s)   %s x the %s s target (<= 1 meets it)\n' \
    "$name" "$frags" "$(ms "$t4")" "$(ms "$t4_sd")" "$(ratio "$t4" "$target")" "$target"
  us=$(python3 -c "print(f'{$tf*1e6/max($entries,1):.1f}')")
  printf '    %-14s find -maxdepth 3: %d entries in %s ms (sd %s) = %s us/entry   %s x the 20 us target (<= 1)\n' \
    "" "$entries" "$(ms "$tf")" "$(ms "$tf_sd")" "$us" "$(ratio "$us" 20)"
done
echo

fi

# ---- (6) slices, (7) diffs (issues 39, 40) -------------------------------------------------
# Tiles decoded come from an in-process read (tiledbfs-view --stats: exact counts); times
# from a fresh mount per run, as a user's first read.
decoded() {  # ARRAY PATH -> "tiles parts stored_bytes" decoded by an in-process read of PATH
  "$bin/tiledbfs-view" --stats "$1" "$2" 2>&1 >/dev/null |
    sed -n 's/.*decoded \([0-9]*\) tiles and \([0-9]*\) tile parts from \([0-9]*\) stored bytes.*/\1 \2 \3/p'
}
cold_cat() {  # ARRAY JSON PATH... : hyperfine of cat PATH... on a fresh mount per run
  local array=$1 json=$2
  shift 2
  local files=""
  for f in "$@"; do files="$files '$mnt/$f'"; done
  hyperfine -N --style none --runs "$runs" --export-json "$json" \
    --prepare "bash -c 'fusermount3 -u $mnt 2>/dev/null; $bin/tiledbfs $array $mnt'" \
    "bash -c \"cat $files > /dev/null\"" >/dev/null
  fusermount3 -u "$mnt" 2>/dev/null || true
}
last_two() {  # ARRAY -> the names of its last two instants in history/
  "$bin/tiledbfs-view" "$1" history | tr -d / | tail -n 2 | paste -sd ' '
}
newest_fragment() {  # ARRAY -> the fragment with the latest end timestamp
  "$bin/tiledbfs-view" "$1" fragments | tr -d / | sort -t_ -k3,3n | tail -n 1
}

if want 6; then
echo "(6) slices                                                   time ms   tiles   ratio"
# Slice reads are timed inside one process on a fresh mount per run
# (benchmarks/cold_read.py): open + read + close, medians. A cat timed by hyperfine
# adds a process spawn, shown beside the first for comparison.
cold() {  # RUNS ARRAY PATH... -> per PATH "median min bytes"
  local n=$1 array=$2
  shift 2
  python3 "$TILEDBFS_ROOT/benchmarks/cold_read.py" "$bin/tiledbfs" "$array" "$mnt" "$n" "$@"
}
d1=$dir/dense1
read -r full_tiles _ _ < <(decoded "$d1" attributes/a.bin)
# One tile decode: the in-process read of all of a.bin on one core, per tile.
hyperfine -N --style none --runs "$runs" --export-json "$work/s_full.json" \
  "taskset -c 0 $bin/tiledbfs-view $d1 attributes/a.bin" >/dev/null
read -r tfull _ < <(hf_mean "$work/s_full.json" 0)
tile_s=$(python3 -c "print($tfull/$full_tiles)")
s1='slice/r=0..511,c=0..255/attributes/a.bin'
read -r n1 p1 _ < <(decoded "$d1" "$s1")
# One-tile slices of distinct tiles (a tile row of dense1's first tiles), each read once on
# one mount that has answered a stat: each as cold as on a fresh mount, without a daemon's
# start. Then the first read of a fresh mount, and a cat (spawn included), for comparison.
one_tile_slices=()
for ((k = 1; k <= 4 * runs; k++)); do
  one_tile_slices+=("slice/r=$((k / 32 * 512))..$((k / 32 * 512 + 511)),c=$((k % 32 * 256))..$((k % 32 * 256 + 255))/attributes/a.bin")
done
read -r t1 t1_min _ < <(python3 "$TILEDBFS_ROOT/benchmarks/cold_read.py" --one-mount "$bin/tiledbfs" \
  "$d1" "$mnt" "${one_tile_slices[@]}")
# The same number of one-tile slices of other tiles (the second and third tile rows), timed
# after 24 more, on one mount: the daemon past its start (its threads started, its heap
# grown), each slice still of a tile read for the first time.
later_slices=()
for ((k = 32; k < 32 + 24 + 4 * runs; k++)); do
  later_slices+=("slice/r=$((k / 32 * 512))..$((k / 32 * 512 + 511)),c=$((k % 32 * 256))..$((k % 32 * 256 + 255))/attributes/a.bin")
done
read -r t1l _ _ < <(python3 "$TILEDBFS_ROOT/benchmarks/cold_read.py" --one-mount --after 24 \
  "$bin/tiledbfs" "$d1" "$mnt" "${later_slices[@]}")
read -r t1f _ _ < <(cold $((4 * runs)) "$d1" "$s1")
cold_cat "$d1" "$work/s1.json" "$s1"
read -r c1 _ < <(hf_mean "$work/s1.json" 0)
printf '    dense1, one tile (%s and %s more tiles), each read once on one mount\n' "$s1" "$((4 * runs))"
printf '                                                        %8s %7s   %s x one tile decode (target <= 2; tiles: target 1)\n' \
  "$(ms "$t1")" "$n1+$p1" "$(ratio "$t1" "$tile_s")"
printf '    the same, the first read of a fresh mount: %s ms (%s x); by `cat` in hyperfine (spawn included): %s ms\n' \
  "$(ms "$t1f")" "$(ratio "$t1f" "$tile_s")" "$(ms "$c1")"
printf '    the same number of other tiles, after 24 more on that mount: %s ms (%s x)\n' \
  "$(ms "$t1l")" "$(ratio "$t1l" "$tile_s")"
d16=$dir/dense16
s2='slice/r=512..1023/attributes/a.bin'
read -r n2 p2 _ < <(decoded "$d16" "$s2")
read -r t2 t2_min _ < <(cold $((2 * runs)) "$d16" "$s2")
printf '    dense16, one tile row (%s), fresh mount\n' "$s2"
printf '                                                        %8s %7s   %s x the decode of those tiles (target <= 2)\n' \
  "$(ms "$t2")" "$n2+$p2" "$(ratio "$t2" "$(python3 -c "print($tile_s*($n2+$p2))")")"
s8=$dir/sparse8
if [ -d "$s8" ]; then
  # About 1 %: a twentieth of the rows, a fifth of the columns.
  read -r rr cc < <("$bin/tiledbfs-view" "$s8" schema.json | python3 -c "import json,sys; d=json.load(sys.stdin)['dims']; print((d[0]['domain'][1]+1)//20-1, (d[1]['domain'][1]+1)//5-1)")
  s3="slice/r=0..$rr,c=0..$cc/data.csv"
  read -r nf _ _ < <(decoded "$s8" data.csv)
  read -r n3 _ _ < <(decoded "$s8" "$s3")
  read -r tf _ fb < <(cold "$runs" "$s8" data.csv)
  read -r t3 t3_min sb < <(cold $((2 * runs)) "$s8" "$s3")
  share=$(python3 -c "print($sb/$fb)")
  printf '    sparse8, %s (%.2f %% of data.csv), fresh mount\n' "$s3" "$(python3 -c "print($share*100)")"
  printf '                                                        %8s %7s   %s x that share of the full first read (%s ms; target <= 3)\n' \
    "$(ms "$t3")" "$n3" "$(ratio "$t3" "$(python3 -c "print($tf*$share)")")" "$(ms "$tf")"
  printf '    tiles read: the slice %s of the full data.csv'"'"'s %s (tiles whose MBRs meet the box)\n' "$n3" "$nf"
fi
echo "    (one tile decode = in-process a.bin of dense1 on one core / its $full_tiles tiles = $(ms "$tile_s") ms; fastest runs ms: $(ms "$t1_min"), $(ms "$t2_min"))"
echo
fi

if want 7; then
echo "(7) diffs between the last two instants                      time ms   tiles   ratio"
for name in dense16 sparse8; do
  a=$dir/$name
  [ -d "$a" ] || { echo "    $name: SKIPPED, missing"; continue; }
  read -r ta tb < <(last_two "$a")
  frag=$(newest_fragment "$a")
  dd="diff/$ta..$tb"
  read -r nd pd _ < <(decoded "$a" "$dd/changed.csv")
  read -r nfr pfr _ < <(decoded "$a" "fragments/$frag/data.csv")
  cold_cat "$a" "$work/d_$name.json" "$dd/summary.json" "$dd/added.csv" "$dd/removed.csv" "$dd/changed.csv"
  cold_cat "$a" "$work/f_$name.json" "fragments/$frag/data.csv"
  read -r td td_sd < <(hf_mean "$work/d_$name.json" 0)
  read -r tfr tfr_sd < <(hf_mean "$work/f_$name.json" 0)
  printf '    %-8s %s: its four files, fresh mount\n' "$name" "$dd"
  printf '                                                        %8s %7s   %s x fragments/<newest>/data.csv (%s ms, %s tiles; target <= 3)\n' \
    "$(ms "$td")" "$((nd + pd))" "$(ratio "$td" "$tfr")" "$(ms "$tfr")" "$((nfr + pfr))"
done
# The diff of sparse8's first and last writes (issue 50: 7/8 of its cells added, 17.5M at
# SCALE 1024): summary.json and added.csv, each on a fresh mount (each pays the pass that
# counts and measures the rows), against the later view's data.csv on a fresh mount; and
# the daemon's peak RSS reading both, against -o cache_size + 64 MiB.
s8=$dir/sparse8
if [ -d "$s8" ]; then
  ta=$("$bin/tiledbfs-view" "$s8" history | tr -d / | sed -n 2p)  # the first write
  tb=$("$bin/tiledbfs-view" "$s8" history | tr -d / | tail -n 1)
  dd="diff/$ta..$tb"
  cold_cat "$s8" "$work/dw_sum.json" "$dd/summary.json"
  cold_cat "$s8" "$work/dw_add.json" "$dd/added.csv"
  cold_cat "$s8" "$work/dw_csv.json" "history/$tb/data.csv"
  read -r tsum _ < <(hf_mean "$work/dw_sum.json" 0)
  read -r tadd _ < <(hf_mean "$work/dw_add.json" 0)
  read -r tcsv _ < <(hf_mean "$work/dw_csv.json" 0)
  mount_fg "$s8" -o cache_size="$rss_cache"
  added=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['added'])" "$mnt/$dd/summary.json")
  cat "$mnt/$dd/added.csv" >/dev/null
  hwm=$(awk '/VmHWM/{print $2}' /proc/$daemon_pid/status)
  unmount "$mnt"
  limit_kib=$(python3 -c "
s='$rss_cache'; m={'K':1,'M':1024,'G':1024**2,'T':1024**3}
print((int(float(s[:-1])*m[s[-1].upper()]) if s[-1].upper() in m else int(s)//1024) + 65536)")
  printf '    sparse8  %s (%s added), fresh mount each
' "$dd" "$added"
  printf '      summary.json                                      %8s           %s x history/<last>/data.csv (%s ms; target <= 3)
' \
    "$(ms "$tsum")" "$(ratio "$tsum" "$tcsv")" "$(ms "$tcsv")"
  printf '      added.csv                                         %8s           %s x the same (target <= 3)
' \
    "$(ms "$tadd")" "$(ratio "$tadd" "$tcsv")"
  printf '      daemon peak RSS reading both on one mount: %d MiB   %s x (cache_size %s + 64 MiB; target <= 1)
' \
    $((hwm / 1024)) "$(ratio "$hwm" "$limit_kib")" "$rss_cache"
fi
fk=$dir/frags10k
if [ -d "$fk" ]; then
  read -r ta tb < <("$bin/tiledbfs-view" "$fk" history | tr -d / | sed -n '5000,5001p' | paste -sd ' ')
  frag=$("$bin/tiledbfs-view" "$fk" fragments | tr -d / | sort -t_ -k3,3n | sed -n '5000p')
  read -r nd pd _ < <(decoded "$fk" "diff/$ta..$tb/changed.csv")
  ft=$("$bin/tiledbfs-view" "$fk" "fragments/$frag/fragment.json" | python3 -c "import json,sys; print(json.load(sys.stdin)['tile_count'])")
  nf=$("$bin/tiledbfs-view" "$fk" schema.json | python3 -c "import json,sys; s=json.load(sys.stdin); print(len(s['dims'])+len(s['attrs']))")
  printf '    frags10k diff/%s..%s (adjacent): %s tiles decoded; its new fragment holds %s tile(s) x %s fields = %s (target: equal)\n' \
    "$ta" "$tb" "$((nd + pd))" "$ft" "$nf" "$((ft * nf))"
fi
echo
fi

# ---- (8) arrays on S3 (issues 38, 39) -------------------------------------------------------
# s3rver on loopback behind tests/s3/fault_proxy.py (10 ms added per request): request counts,
# cat of a.bin against local and curl baselines, head's round trips, peak RSS of 8 readers,
# and the bytes a one-tile slice fetches. scripts/bench_s3.py says how each is measured.
# Then issue 51's target 4: a remount of sparse8 with the persistent index makes LISTs only,
# beside the first mount's requests and time (scripts/bench_s3_index.py).
if want 8; then
tiledbfs_install_node
python3 "$TILEDBFS_ROOT/scripts/bench_s3.py" "$bin" "$dir" "$runs"
python3 "$TILEDBFS_ROOT/scripts/bench_s3_index.py" "$bin" "$dir"
echo
fi

# ---- (10) data.parquet (issue 52) ----------------------------------------------------------
# DuckDB over data.parquet against data.csv and against a slice's file, and cat of dense1's
# data.parquet against a.bin per byte: scripts/bench_parquet.py says how each is measured.
if want 10; then
tiledbfs_install_node
python3 "$TILEDBFS_ROOT/scripts/bench_parquet.py" "$bin" "$dir" "$runs"
echo
fi

# ---- (11) an append with the persistent index (issue 51, target 2) ----------------------------
# sparse8's shape at BENCH_SCALE with room for rows after its own, written in the run's temp
# dir: the first ls -l, then the same after appending 1% more cells past the last row (target
# <= 5% of the first), and without the index: scripts/bench_index_append.py says how. It mounts
# with the build's own tiledbfs, as it needs the index that this run's turns off.
if want 11; then
echo "(11) an append with the persistent index"
python3 "$TILEDBFS_ROOT/scripts/bench_index_append.py" "$build/bin" "$work" "$scale"
echo
fi

# ---- (9) scale (issue 50) ------------------------------------------------------------------
# sparse8 and the SOMA-shaped matrix (make-bench-arrays.sh soma) at BENCH_SCALE9 MiB (default
# 10240: 200M cells each; 51200 for the opt-in 1,000M: 13 GB and minutes to write), made under
# $dir/scale-<MiB> when missing. Each figure once, beside its baseline from the same run:
#   the first look, ls -l of the root, attributes/ and dimensions/ on a fresh mount, against
#   cat data.csv > /dev/null of the same view on another fresh mount (target <= 0.5 x); after
#   the look, tail -c 100 of data.csv (target <= 50 ms) and of each .txt, a slice of the
#   first 1% of rows, diff/<first write>..<last>/summary.json; and the daemon's peak RSS
#   through all of that, against cache_size (BENCH_CACHE) + 64 MiB. Then (issue 51) the
#   look and the diff again on a mount that writes the persistent index, and on a remount
#   that reads it (target <= 0.2 s; tail -c 100 data.csv <= 50 ms; the index <= 1 % of the
#   array; the diff with no pass).
if want 9; then
scale9=${BENCH_SCALE9:-10240}
sdir=$dir/scale-$scale9
missing=""
for a in sparse8 soma; do [ -d "$sdir/$a" ] || missing="$missing ${a/8/}"; done
if [ -n "$missing" ]; then
  TILEDBFS_BUILD=$build BENCH_ARRAYS="$missing" \
    "$TILEDBFS_ROOT/scripts/make-bench-arrays.sh" "$sdir" "$scale9"
fi
# Seconds since $1 (an $EPOCHREALTIME): the clock is read first, then the sum made (a python
# started to read it would add its own start, 0.1 s here, to every figure).
secs() { local t1=$EPOCHREALTIME; awk -v a="$1" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'; }
limit9_kib=$(python3 -c "
s='$rss_cache'; m={'K':1,'M':1024,'G':1024**2,'T':1024**3}
print((int(float(s[:-1])*m[s[-1].upper()]) if s[-1].upper() in m else int(s)//1024) + 65536)")
echo "(9) scale: $sdir (BENCH_SCALE9=$scale9), cache_size $rss_cache, each figure once"
for a in sparse8 soma; do
  arr=$sdir/$a
  mount_fg "$arr" -o cache_size="$rss_cache"
  t0=$EPOCHREALTIME; cat "$mnt/data.csv" >/dev/null; tcat=$(secs "$t0")
  unmount "$mnt"
  mount_fg "$arr" -o cache_size="$rss_cache"
  t0=$EPOCHREALTIME; ls -l "$mnt" "$mnt/attributes" "$mnt/dimensions" >/dev/null; tls=$(secs "$t0")
  t0=$EPOCHREALTIME; tail -c 100 "$mnt/data.csv" >/dev/null; ttail=$(secs "$t0")
  cells=$(python3 -c "import os,sys; print(os.stat(sys.argv[1]).st_size // 8)" \
    "$(ls "$mnt"/dimensions/*.bin | head -1)")
  printf '    %-8s %s cells; data.csv %s bytes\n' "$a" "$cells" "$(stat -c %s "$mnt/data.csv")"
  printf '      first ls -l of /, attributes/, dimensions/  %9s s   %s x cat data.csv (%s s; target <= 0.5)\n' \
    "$tls" "$(ratio "$tls" "$tcat")" "$tcat"
  printf '      then tail -c 100 data.csv                  %9s ms  (target <= 50 ms)\n' "$(ms "$ttail")"
  for f in "$mnt"/attributes/*.txt "$mnt"/dimensions/*.txt; do
    t0=$EPOCHREALTIME; tail -c 100 "$f" >/dev/null; tt=$(secs "$t0")
    printf '      then tail -c 100 %-26s %9s ms\n' "${f#"$mnt"/}" "$(ms "$tt")"
  done
  read -r d0 dlo dhi < <(python3 -c "
import json,sys; d=json.load(open(sys.argv[1]))['dims'][0]; print(d['name'], *d['domain'])" \
    "$mnt/schema.json")
  lo=$(head -c 4096 "$mnt/dimensions/$d0.txt" | head -1)
  hi=$((dlo + (dhi - dlo) / 100))
  t0=$EPOCHREALTIME; n=$(cat "$mnt/slice/$d0=$lo..$hi/data.csv" | wc -l); tsl=$(secs "$t0")
  printf '      slice/%s=%s..%s/data.csv (%s lines) %9s s\n' "$d0" "$lo" "$hi" "$n" "$tsl"
  ta=$(ls "$mnt/history" | sed -n 2p); tb=$(ls "$mnt/history" | tail -n 1)
  t0=$EPOCHREALTIME; cat "$mnt/diff/$ta..$tb/summary.json" >/dev/null; tdf=$(secs "$t0")
  printf '      diff/<first>..<last>/summary.json          %9s s\n' "$tdf"
  hwm=$(awk '/VmHWM/{print $2}' /proc/$daemon_pid/status)
  unmount "$mnt"
  printf '      daemon peak RSS through all of that: %d MiB   %s x (cache_size %s + 64 MiB; target <= 1)\n' \
    $((hwm / 1024)) "$(ratio "$hwm" "$limit9_kib")" "$rss_cache"
  # Issue 51: the same look on a mount that writes the persistent index, then on a remount.
  idx=$work/index-$a
  mount_fg "$arr" -o cache_size="$rss_cache",index=on,index_dir="$idx"
  ls -l "$mnt" "$mnt/attributes" "$mnt/dimensions" >/dev/null
  cat "$mnt/diff/$ta..$tb/summary.json" >/dev/null
  unmount "$mnt"
  mount_fg "$arr" -o cache_size="$rss_cache",index=on,index_dir="$idx"
  t0=$EPOCHREALTIME; ls -l "$mnt" "$mnt/attributes" "$mnt/dimensions" >/dev/null; tre=$(secs "$t0")
  t0=$EPOCHREALTIME; tail -c 100 "$mnt/data.csv" >/dev/null; trt=$(secs "$t0")
  t0=$EPOCHREALTIME; cat "$mnt/diff/$ta..$tb/summary.json" >/dev/null; trd=$(secs "$t0")
  unmount "$mnt"
  ib=$(du -sb "$idx" | cut -f1)
  ab=$(du -sb "$arr" | cut -f1)
  printf '      remount with the index: ls -l as above   %9s s   (target <= 0.2 s); then tail -c 100 data.csv %s ms (target <= 50)\n' \
    "$tre" "$(ms "$trt")"
  printf '      then the same diff/<first>..<last>/summary.json %9s s   (%s s on the first mount)\n' "$trd" "$tdf"
  printf '      the index: %s bytes, %s %% of the array'"'"'s %s (target <= 1 %%)\n' "$ib" \
    "$(python3 -c "print(f'{100*$ib/$ab:.3f}')")" "$ab"
done
echo
fi

# ---- (5) data.csv of a sparse array ----------------------------------------------------------
# Array (b): the whole of data.csv (every cell of 8 interleaved fragments, rendered) through
# the mount on a fresh mount (layout pass and decode), again on the same mount, and
# in-process (tiledbfs-view, no FUSE).
if want 5; then
array=$dir/sparse8
if [ ! -d "$array" ]; then
  echo "(5) data.csv of sparse8: SKIPPED, $array missing (scripts/make-bench-arrays.sh makes it)"
  exit 0
fi
mount_fg "$array"
csv_bytes=$(stat -c %s "$mnt/data.csv")
unmount "$mnt"
hyperfine -N --style none --runs "$runs" --export-json "$work/csv_cold.json" \
  --prepare "bash -c 'fusermount3 -u $mnt 2>/dev/null; $bin/tiledbfs $array $mnt'" \
  "cat $mnt/data.csv" >/dev/null
fusermount3 -u "$mnt" 2>/dev/null || true
mount_fg "$array"
cat "$mnt/data.csv" >/dev/null  # the first read of this mount
# Later reads: the file's pages are dropped first (the kernel keeps them otherwise), so each
# read is rendered again, with the layout pass done: the render alone.
hyperfine -N --style none --runs "$runs" --export-json "$work/csv_warm.json" \
  --prepare "bash -c '$drop $mnt/data.csv'" \
  "cat $mnt/data.csv" "$bin/tiledbfs-view $array data.csv" >/dev/null
unmount "$mnt"
# The target's "on one core": the same first read with the daemon (all its threads) and
# cat on CPU 0 only, and the in-process render on CPU 0.
hyperfine -N --style none --runs "$runs" --export-json "$work/csv_one.json" \
  --prepare "bash -c 'fusermount3 -u $mnt 2>/dev/null; taskset -c 0 $bin/tiledbfs $array $mnt'" \
  "taskset -c 0 cat $mnt/data.csv" >/dev/null
fusermount3 -u "$mnt" 2>/dev/null || true
# The layout pass alone on one core: a fresh mount's first stat of data.csv (its exact size
# needs every cell's text measured).
hyperfine -N --style none --runs "$runs" --export-json "$work/csv_one_stat.json" \
  --prepare "bash -c 'fusermount3 -u $mnt 2>/dev/null; taskset -c 0 $bin/tiledbfs $array $mnt'" \
  "taskset -c 0 stat -c %s $mnt/data.csv" >/dev/null
fusermount3 -u "$mnt" 2>/dev/null || true
hyperfine -N --style none --runs "$runs" --export-json "$work/csv_one_view.json" \
  "taskset -c 0 $bin/tiledbfs-view $array data.csv" >/dev/null
# The render alone on one core: the layout pass done by a first read, then reads of the same
# mount with the file's pages dropped first.
taskset -c 0 "$bin/tiledbfs" "$array" "$mnt"
taskset -c 0 cat "$mnt/data.csv" >/dev/null
hyperfine -N --style none --runs "$runs" --export-json "$work/csv_one_warm.json" \
  --prepare "bash -c '$drop $mnt/data.csv'" "taskset -c 0 cat $mnt/data.csv" >/dev/null
unmount "$mnt"
read -r c1 c1_sd < <(hf_mean "$work/csv_cold.json" 0)
read -r c2 c2_sd < <(hf_mean "$work/csv_warm.json" 0)
read -r cv cv_sd < <(hf_mean "$work/csv_warm.json" 1)
read -r o1 o1_sd < <(hf_mean "$work/csv_one.json" 0)
read -r ov ov_sd < <(hf_mean "$work/csv_one_view.json" 0)
read -r o2 o2_sd < <(hf_mean "$work/csv_one_warm.json" 0)
read -r os os_sd < <(hf_mean "$work/csv_one_stat.json" 0)
mbps() { python3 -c "import sys; print(f'{$csv_bytes/float(sys.argv[1])/1e6:.0f}')" "$1"; }
to200() { python3 -c "import sys; print(f'{$csv_bytes/float(sys.argv[1])/1e6/200:.2f}')" "$1"; }
echo "(5) cat data.csv > /dev/null of sparse8 ($csv_bytes bytes)    time ms    MB/s   ratio"
printf '    mount, first read (fresh mount per run)    %8s %7s   %s x the 200 MB/s target (>= 1 meets it)\n' \
  "$(ms "$c1")" "$(mbps "$c1")" "$(to200 "$c1")"
printf '    mount, second read (render alone: same mount, pages dropped)\n'
printf '                                               %8s %7s   %s x the 200 MB/s target\n' \
  "$(ms "$c2")" "$(mbps "$c2")" "$(to200 "$c2")"
printf '    in-process: tiledbfs-view (no FUSE)        %8s %7s   %s x the 200 MB/s target\n' \
  "$(ms "$cv")" "$(mbps "$cv")" "$(to200 "$cv")"
printf '    mount, first read, all on one core         %8s %7s   %s x the 200 MB/s target\n' \
  "$(ms "$o1")" "$(mbps "$o1")" "$(to200 "$o1")"
printf '    in-process, on one core                    %8s %7s   %s x the 200 MB/s target\n' \
  "$(ms "$ov")" "$(mbps "$ov")" "$(to200 "$ov")"
printf '    mount, second read, all on one core        %8s %7s   %s x (the render alone)\n' \
  "$(ms "$o2")" "$(mbps "$o2")" "$(to200 "$o2")"
printf '    mount, layout pass alone (stat), one core  %8s          %s of the first read on one core\n' \
  "$(ms "$os")" "$(python3 -c "import sys; print(f'{float(sys.argv[1])/float(sys.argv[2]):.2f}')" "$os" "$o1")"
echo "    (stddev ms: first $(ms "$c1_sd"), second $(ms "$c2_sd"), view $(ms "$cv_sd"), one core: mount $(ms "$o1_sd"), view $(ms "$ov_sd"), second $(ms "$o2_sd"), layout $(ms "$os_sd"))"
fi
