// The lazily loaded sections of __fragment_metadata.tdb (format 3+): each is
// the payload of one generic tile at an offset the footer gives. These
// parsers take the unfiltered payload; FragmentMetadata reads the tiles.
// Spec: format_spec/fragment.md (R-Tree, Tile Offsets, Tile Sizes, Tile Mins
// Maxes, Tile Sums, Tile Null Count, Tile Fragment Min Max Sum Null Count,
// Tile Processed Conditions).
//
// R-tree:
//   dim num uint32 (before 5), fanout uint32, datatype uint8 (before 5),
//   level num uint32, then per level (root first, leaves last):
//   MBR num uint64, MBRs (one Range per dimension; ReadNdRange encoding
//   from 5, ReadFixedNdRange before).
// Tile offsets / var sizes / null counts / sums:
//   count uint64, uint64[count].
// Tile mins / maxes (what TileDB writes; the spec's table is inexact):
//   fixed buffer size uint64, var buffer size uint64, fixed buffer, var
//   buffer. Fixed-sized fields: one cell per tile in the fixed buffer;
//   var-sized: one uint64 offset per tile into the var buffer.
// Fragment min/max/sum/null count (12+), per field 0..N-1:
//   min size uint64, min, max size uint64, max, sum uint64, null count uint64.
// Processed conditions (16+):
//   count uint64, then per condition: size uint64, name bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/fragment/fragment_footer.h"

namespace tiledbfs::core {

// Per-tile statistics of one field (format 11+).
struct TileStats {
  std::vector<ByteVec> mins, maxs;  // per tile; var fields: the value bytes
  std::vector<uint64_t> sums;       // per tile (bytes of int64/uint64/double)
  std::vector<uint64_t> null_counts;
};

// Fragment-level min, max, sum, null count of one field.
struct FragmentStats {
  ByteVec min, max;
  uint64_t sum = 0;
  uint64_t null_count = 0;
};

// A count followed by that many uint64 values. The count is checked against
// the bytes present before anything is allocated; trailing bytes are corrupt.
Result<std::vector<uint64_t>> ParseUint64List(Bytes payload, uint64_t file_offset,
                                              std::string_view what);

// The leaf level of an R-tree: one MBR per tile. `version` is the fragment's.
Result<std::vector<std::vector<Range>>> ParseRTreeLeaves(Bytes payload, uint64_t file_offset,
                                                         const ArraySchema& schema,
                                                         uint32_t version);

// One tile min or max section. `cell_size` is the bytes of one value of a
// fixed-sized field (ignored when `var`).
Result<std::vector<ByteVec>> ParseTileMinMax(Bytes payload, uint64_t file_offset, bool var,
                                             uint64_t cell_size, std::string_view what);

// The fragment min/max/sum/null count section for `field_count` fields.
Result<std::vector<FragmentStats>> ParseFragmentStats(Bytes payload, uint64_t file_offset,
                                                      uint64_t field_count);

Result<std::vector<std::string>> ParseProcessedConditions(Bytes payload, uint64_t file_offset);

}  // namespace tiledbfs::core
