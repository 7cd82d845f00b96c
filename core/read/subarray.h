// A subarray: per dimension, the closed range [lo, hi] a slice keeps
// (docs/namespace.md "Slices"), or none for the dimension's whole extent.
// Values are in the dimension's own type (strings: their bytes).
#pragma once

#include <optional>
#include <vector>

#include "core/schema/array_schema.h"
#include "core/util/bytes.h"

namespace tiledbfs::core {

using Subarray = std::vector<std::optional<Range>>;

// Whether value v of dimension `dim` lies in r (both ends included).
bool RangeHolds(const Dimension& dim, const Range& r, Bytes v);

// Whether the rectangle `box` (a fragment's non-empty domain or a tile's
// MBR, one range per dimension) meets the subarray. A box of another
// dimension count, or with malformed bounds, is taken to meet it: the cells
// themselves are then checked.
bool BoxMeets(const ArraySchema& schema, const Subarray& sub, const std::vector<Range>& box);

// Whether the rectangle `box` lies wholly inside the subarray (a box of
// another dimension count, or with malformed bounds, does not).
bool BoxWithin(const ArraySchema& schema, const Subarray& sub, const std::vector<Range>& box);

// Whether the cell whose coordinate of dimension d is coord(d) lies in the
// subarray.
template <typename CoordOf>
bool CellIn(const ArraySchema& schema, const Subarray& sub, CoordOf coord) {
  for (size_t d = 0; d < sub.size(); ++d) {
    if (sub[d] && !RangeHolds(schema.dimensions[d], *sub[d], coord(d))) return false;
  }
  return true;
}

}  // namespace tiledbfs::core
