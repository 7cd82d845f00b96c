// Fragment metadata before format 3: __fragment_metadata.tdb is one generic
// tile holding everything (no footer, no lazy sections). The fragment is
// dense when its folder has no __coords.tdb.
// Spec: format_spec/fragment.md#legacy-fragment-metadata-file.
//
//   field                        type
//   version                      uint32
//   non-empty domain size        uint64   (0: none)
//   non-empty domain             lo, hi per dimension (coord size each)
//   MBR num                      uint64
//   MBRs                         lo, hi per dimension, per MBR
//   bounding coords num          uint64
//   bounding coords              2 x coords per entry (skipped)
//   tile offsets                 per field 0..A (A attributes, then coords):
//                                count uint64, uint64[count]
//   tile var offsets             per attribute: count uint64, uint64[count]
//   tile var sizes               per attribute: count uint64, uint64[count]
//   last tile cell num           uint64
//   file sizes                   uint64[A + 1]
//   file var sizes               uint64[A]
#pragma once

#include <cstdint>
#include <vector>

#include "core/fragment/fragment_footer.h"

namespace tiledbfs::core {

struct LegacyFragmentMetadata {
  // version, NED, sparse_tile_num (= MBR count), last tile cell num, file
  // sizes and var sizes (padded with a 0 for the coords slot, as for 3-4);
  // the section offsets stay empty.
  FragmentFooter footer;
  std::vector<std::vector<Range>> mbrs;
  std::vector<std::vector<uint64_t>> tile_offsets;      // A + 1
  std::vector<std::vector<uint64_t>> tile_var_offsets;  // A + 1 (coords: empty)
  std::vector<std::vector<uint64_t>> tile_var_sizes;    // A + 1 (coords: empty)
};

// Parses the unfiltered payload. `dense` comes from the folder (no
// __coords.tdb). Errors: kCorrupt (truncated, counts larger than the bytes
// present, version other than 1 or 2, trailing bytes).
Result<LegacyFragmentMetadata> ParseLegacyFragmentMetadata(Bytes payload, uint64_t file_offset,
                                                           const ArraySchema& schema, bool dense);

}  // namespace tiledbfs::core
