#!/usr/bin/env bash
# Makes the benchmark arrays of issue 5 with our own writer (build/bin/tiledb-mkarray).
#   scripts/make-bench-arrays.sh DIR [SCALE_MIB]
# SCALE_MIB: MiB of float64 values in the latest view of the dense arrays (default 1024 =
# the issue's 1 GiB; a multiple of 32, e.g. 64 for a quick run); the sparse array scales
# with it. Set TILEDBFS_BUILD to use another build dir, BENCH_ARRAYS to make only some of
# them (words among dense, sparse, frags, soma; default dense sparse frags).
#
# Values come from `tiledb-mkarray write --synthetic SEED`: a function of (seed, attribute,
# coordinates) only, so fragments written with the same seed agree where they overlap.
# Every write streams tile by tile (memory does not grow with the array).
#
# Makes, under DIR:
#   dense1   (a) dense 2D float64 attribute 'a', BYTESHUFFLE + ZSTD(3), 64 KiB chunks,
#            rows x 8192 columns, 512 x 256 tiles (1 MiB of values per tile), 1 fragment.
#   dense16  (a) the same schema in 16 overlapping fragments: fragment k covers the row band
#            k of 16, widened by half a band on each side (clipped to the domain), so every
#            row is written by 2 or 3 fragments. Same seed as dense1: its latest view holds
#            exactly dense1's values.
#   sparse8  (b) sparse 2D int64 (r, c), float64 'v' (BYTESHUFFLE + ZSTD) and var-sized
#            string 's' (ZSTD, 0 to 12 letters), capacity 100,000, 1000 x 1000 space tiles,
#            20 million cells at SCALE_MIB 1024 (proportionally fewer below), in 8 fragments:
#            fragment k holds cells/8 distinct cells of column band k of 8 (1250 columns),
#            so the fragments are disjoint but interleave tile by tile in the global order.
#   frags10k (c) sparse 2D int64, float64 'v' (ZSTD), 10,000 small fragments written in one
#            call (--fragments): fragment k is row k, 10 to 100 cells, timestamp 1000 + k.
#            Not scaled. No __fragment_meta/.
#   frags10k_meta  (c) a copy of frags10k with `tiledb-mkarray consolidate-metadata`
#            (__fragment_meta/), made only when the built tiledb-mkarray has that command.
#   soma     (d, opt-in) the shape of a TileDB-SOMA X matrix (issue 50): soma_dim_0 INT64
#            0-4,499,999 by soma_dim_1 INT64 0-59,999, both tile extent 2048, soma_data
#            FLOAT32 (ZSTD), capacity 100,000; as many cells as sparse8 (200M at SCALE_MIB
#            10240) in 8 fragments of disjoint row bands. Row-major order over 2048 x 2048
#            space tiles is not the fragments' global order: its coordinates and ordinals
#            do not pack in 64 bits for the whole view.
set -euo pipefail
TILEDBFS_ROOT=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: make-bench-arrays.sh DIR [SCALE_MIB]}
scale=${2:-1024}
build=${TILEDBFS_BUILD:-$TILEDBFS_ROOT/build}
mk=$build/bin/tiledb-mkarray
[ -x "$mk" ] || { echo "make-bench-arrays: $mk not found (build the project first)" >&2; exit 1; }
if ! [[ "$scale" =~ ^[0-9]+$ ]] || [ "$scale" -lt 32 ] || [ $((scale % 32)) -ne 0 ]; then
  echo "make-bench-arrays: SCALE_MIB must be a multiple of 32 (got $scale)" >&2
  exit 1
fi
mkdir -p "$dir"
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
t_all=$(now)
arrays=" ${BENCH_ARRAYS:-dense sparse frags} "

# ------------------------------------------------------------------ (a) dense
if [[ $arrays == *" dense "* ]]; then
cols=8192
rows=$((scale * 1024 * 1024 / (cols * 8)))  # 16 rows per MiB
schema=$dir/dense.schema.json
cat >"$schema" <<JSON
{
  "array_type": "dense",
  "tile_order": "row-major",
  "cell_order": "row-major",
  "dims": [
    {"name": "r", "type": "INT64", "domain": [0, $((rows - 1))], "tile_extent": 512},
    {"name": "c", "type": "INT64", "domain": [0, $((cols - 1))], "tile_extent": 256}
  ],
  "attrs": [
    {"name": "a", "type": "FLOAT64",
     "filter_pipeline": {"max_chunk_size": 65536,
                         "filters": [{"name": "BYTESHUFFLE"}, {"name": "ZSTD", "level": 3}]}}
  ]
}
JSON

rm -rf "$dir/dense1"
t0=$(now)
"$mk" create "$dir/dense1" --schema "$schema" --timestamp 1
"$mk" write "$dir/dense1" --timestamp 10 --synthetic 1 >/dev/null
echo "dense1: ${rows} x ${cols} float64 (${scale} MiB), 1 fragment:" \
  "$(du -sh "$dir/dense1" | cut -f1) in $(took "$t0")"

rm -rf "$dir/dense16"
t0=$(now)
"$mk" create "$dir/dense16" --schema "$schema" --timestamp 1
band=$((rows / 16))
for k in $(seq 0 15); do
  lo=$((k * band - band / 2))
  hi=$(((k + 1) * band + band / 2 - 1))
  [ "$lo" -ge 0 ] || lo=0
  [ "$hi" -lt "$rows" ] || hi=$((rows - 1))
  "$mk" write "$dir/dense16" --timestamp $((10 + k)) --synthetic 1 \
    --subarray "$lo:$hi,0:$((cols - 1))" >/dev/null
done
echo "dense16: the same schema and values, 16 overlapping fragments:" \
  "$(du -sh "$dir/dense16" | cut -f1) in $(took "$t0")"
fi

# ------------------------------------------------------------------ (b) sparse
if [[ $arrays == *" sparse "* ]]; then
cells=$((20000000 * scale / 1024))
srows=$((20000 * scale / 1024 / 1000 * 1000))  # density 10% (1000 rows at least)
[ "$srows" -ge 1000 ] || srows=1000
scols=10000
cat >"$dir/sparse.schema.json" <<JSON
{
  "array_type": "sparse",
  "tile_order": "row-major",
  "cell_order": "row-major",
  "capacity": 100000,
  "dims": [
    {"name": "r", "type": "INT64", "domain": [0, $((srows - 1))], "tile_extent": 1000},
    {"name": "c", "type": "INT64", "domain": [0, $((scols - 1))], "tile_extent": 1000}
  ],
  "attrs": [
    {"name": "v", "type": "FLOAT64",
     "filter_pipeline": {"max_chunk_size": 65536,
                         "filters": [{"name": "BYTESHUFFLE"}, {"name": "ZSTD", "level": 3}]}},
    {"name": "s", "type": "STRING_ASCII", "var": true,
     "filter_pipeline": {"max_chunk_size": 65536, "filters": [{"name": "ZSTD", "level": 3}]}}
  ],
  "coords_filters": {"max_chunk_size": 65536,
                     "filters": [{"name": "BYTESHUFFLE"}, {"name": "ZSTD", "level": 3}]}
}
JSON
rm -rf "$dir/sparse8"
t0=$(now)
"$mk" create "$dir/sparse8" --schema "$dir/sparse.schema.json" --timestamp 1
width=$((scols / 8))
for k in $(seq 0 7); do
  "$mk" write "$dir/sparse8" --timestamp $((10 + k)) --synthetic 1 --cells $((cells / 8)) \
    --subarray "0:$((srows - 1)),$((k * width)):$(((k + 1) * width - 1))" >/dev/null
done
echo "sparse8: $((cells / 8 * 8)) cells in ${srows} x ${scols}, 8 fragments:" \
  "$(du -sh "$dir/sparse8" | cut -f1) in $(took "$t0")"
fi

# ------------------------------------------------------------------ (c) many fragments
if [[ $arrays == *" frags "* ]]; then
cat >"$dir/frags.schema.json" <<JSON
{
  "array_type": "sparse",
  "capacity": 1000,
  "dims": [
    {"name": "r", "type": "INT64", "domain": [0, 9999], "tile_extent": 100},
    {"name": "c", "type": "INT64", "domain": [0, 999], "tile_extent": 1000}
  ],
  "attrs": [
    {"name": "v", "type": "FLOAT64",
     "filter_pipeline": {"max_chunk_size": 65536, "filters": [{"name": "ZSTD", "level": 3}]}}
  ]
}
JSON
rm -rf "$dir/frags10k" "$dir/frags10k_meta"
t0=$(now)
"$mk" create "$dir/frags10k" --schema "$dir/frags.schema.json" --timestamp 1
"$mk" write "$dir/frags10k" --timestamp 1000 --synthetic 1 --cells 10:100 \
  --fragments 10000 >/dev/null
echo "frags10k: 10,000 sparse fragments of 10 to 100 cells:" \
  "$(du -sh "$dir/frags10k" | cut -f1) in $(took "$t0")"

usage=$("$mk" 2>&1 || true)
if grep -q "consolidate-metadata" <<<"$usage"; then
  t0=$(now)
  cp -r "$dir/frags10k" "$dir/frags10k_meta"
  "$mk" consolidate-metadata "$dir/frags10k_meta" >/dev/null
  echo "frags10k_meta: a copy with __fragment_meta/: in $(took "$t0")"
else
  echo "frags10k_meta: SKIPPED, this tiledb-mkarray has no consolidate-metadata command"
fi
fi

# ------------------------------------------------------------------ (d) SOMA-shaped
if [[ $arrays == *" soma "* ]]; then
cells=$((20000000 * scale / 1024))
cat >"$dir/soma.schema.json" <<JSON
{
  "array_type": "sparse",
  "tile_order": "row-major",
  "cell_order": "row-major",
  "capacity": 100000,
  "dims": [
    {"name": "soma_dim_0", "type": "INT64", "domain": [0, 4499999], "tile_extent": 2048},
    {"name": "soma_dim_1", "type": "INT64", "domain": [0, 59999], "tile_extent": 2048}
  ],
  "attrs": [
    {"name": "soma_data", "type": "FLOAT32",
     "filter_pipeline": {"filters": [{"name": "ZSTD", "level": 3}]}}
  ],
  "coords_filters": {"filters": [{"name": "ZSTD", "level": 3}]}
}
JSON
rm -rf "$dir/soma"
t0=$(now)
"$mk" create "$dir/soma" --schema "$dir/soma.schema.json" --timestamp 1
band=$((4500000 / 8))
for k in $(seq 0 7); do
  "$mk" write "$dir/soma" --timestamp $((10 + k)) --synthetic 1 --cells $((cells / 8)) \
    --subarray "$((k * band)):$(((k + 1) * band - 1)),0:59999" >/dev/null
done
echo "soma: $((cells / 8 * 8)) cells in 4500000 x 60000, 8 row bands:" \
  "$(du -sh "$dir/soma" | cut -f1) in $(took "$t0")"
fi

echo "all made in $(took "$t_all") under $dir"
