#include "core/read/subarray.h"

#include "core/read/coords.h"

namespace tiledbfs::core {

bool RangeHolds(const Dimension& dim, const Range& r, Bytes v) {
  return CompareValues(dim.type, Bytes(r.lo), v) <= 0 &&
         CompareValues(dim.type, v, Bytes(r.hi)) <= 0;
}

bool BoxMeets(const ArraySchema& schema, const Subarray& sub, const std::vector<Range>& box) {
  if (box.size() != sub.size()) return true;
  for (size_t d = 0; d < sub.size(); ++d) {
    if (!sub[d]) continue;
    const Dimension& dim = schema.dimensions[d];
    const size_t size = dim.var() ? 0 : DatatypeSize(dim.type);
    if (size != 0 && (box[d].lo.size() != size || box[d].hi.size() != size)) continue;
    // Disjoint when the box ends before the range starts or starts after it ends.
    if (CompareValues(dim.type, Bytes(box[d].hi), Bytes(sub[d]->lo)) < 0 ||
        CompareValues(dim.type, Bytes(sub[d]->hi), Bytes(box[d].lo)) < 0) {
      return false;
    }
  }
  return true;
}

bool BoxWithin(const ArraySchema& schema, const Subarray& sub, const std::vector<Range>& box) {
  if (box.size() != sub.size()) return false;
  for (size_t d = 0; d < sub.size(); ++d) {
    if (!sub[d]) continue;
    const Dimension& dim = schema.dimensions[d];
    const size_t size = dim.var() ? 0 : DatatypeSize(dim.type);
    if (size != 0 && (box[d].lo.size() != size || box[d].hi.size() != size)) return false;
    if (!RangeHolds(dim, *sub[d], Bytes(box[d].lo)) ||
        !RangeHolds(dim, *sub[d], Bytes(box[d].hi))) {
      return false;
    }
  }
  return true;
}

}  // namespace tiledbfs::core
