#!/usr/bin/env bash
# Makes the benchmark arrays of issue 5 with our own writer (build/bin/tiledb-mkarray).
#   scripts/make-bench-arrays.sh DIR [SCALE_MIB]
# SCALE_MIB: MiB of float64 values in the latest view (default 1024 = the issue's 1 GiB;
# a multiple of 32, e.g. 64 for a quick run). Set TILEDBFS_BUILD to use another build dir.
#
# Makes, under DIR:
#   dense1   dense 2D float64 attribute 'a', BYTESHUFFLE + ZSTD(3), 64 KiB chunks,
#            rows x 8192 columns, 512 x 256 tiles (1 MiB of values per tile), 1 fragment.
#   dense16  the same schema in 16 overlapping fragments: fragment k covers the row band
#            k of 16, widened by half a band on each side (clipped to the domain), so every
#            row is written by 2 or 3 fragments and the latest view covers the whole domain.
# Not (yet) made, with the reason:
#   - dense16 does NOT hold the same values as dense1: `tiledb-mkarray write --synthetic`
#     derives each value from (seed, attribute, index of the cell within the write), not
#     from its coordinates, so a sub-array write cannot reproduce dense1's values. The
#     shapes, sizes, tiles and compressibility are the same; only the values differ.
#   - array (b), sparse 2D int64 with 20 million cells, float64 + var string, 8 fragments,
#     and array (c), 10,000 small fragments with and without __fragment_meta/: later
#     increments (the writer makes sparse fragments; __fragment_meta/ it cannot write yet).
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
cols=8192
rows=$((scale * 1024 * 1024 / (cols * 8)))  # 16 rows per MiB
mkdir -p "$dir"
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

t0=$(date +%s)
echo "dense1: ${rows} x ${cols} float64 (${scale} MiB), 1 fragment"
rm -rf "$dir/dense1"
"$mk" create "$dir/dense1" --schema "$schema" --timestamp 1
"$mk" write "$dir/dense1" --timestamp 10 --synthetic 1 >/dev/null

echo "dense16: the same schema, 16 overlapping fragments"
rm -rf "$dir/dense16"
"$mk" create "$dir/dense16" --schema "$schema" --timestamp 1
band=$((rows / 16))
for k in $(seq 0 15); do
  lo=$((k * band - band / 2))
  hi=$(((k + 1) * band + band / 2 - 1))
  [ "$lo" -ge 0 ] || lo=0
  [ "$hi" -lt "$rows" ] || hi=$((rows - 1))
  "$mk" write "$dir/dense16" --timestamp $((10 + k)) --synthetic $((100 + k)) \
    --subarray "$lo:$hi,0:$((cols - 1))" >/dev/null
done
echo "made in $(($(date +%s) - t0)) s: $(du -sh "$dir/dense1" | cut -f1) dense1," \
  "$(du -sh "$dir/dense16" | cut -f1) dense16"
