// Limits on what untrusted numbers may make us allocate (docs/style.md 6). One
// struct with sane defaults; every loader takes it, and only entry points
// (mains, the mount's options, tests) name DefaultLimits().
#pragma once

#include <cstdint>

namespace tiledbfs::core {

struct Limits {
  // Largest unfiltered tile or generic tile we will allocate.
  uint64_t max_tile_bytes = uint64_t{4} << 30;
  // Largest metadata structure (schema, footer, commit list, metadata file).
  uint64_t max_metadata_bytes = uint64_t{1} << 30;
  // Largest number of cells a view may hold when materialised in memory.
  uint64_t max_view_cells = uint64_t{1} << 34;
  // Most fragments, schemas or commit files in one array folder.
  uint64_t max_files = uint64_t{1} << 22;
  // Deepest nesting of a delete or update condition (parsed recursively).
  int max_condition_depth = 512;
  // Largest fixed cell given its whole default fill value: past it
  // Attribute::fill_value holds one value, which readers repeat to the cell
  // size, so an untrusted cell_val_num allocates nothing.
  uint64_t max_default_fill_bytes = uint64_t{64} << 10;
};

inline const Limits& DefaultLimits() {
  static const Limits kLimits;
  return kLimits;
}

}  // namespace tiledbfs::core
