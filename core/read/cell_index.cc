#include "core/read/cell_index.h"

#include <algorithm>

namespace tiledbfs::core {

CellRun CellIndex::RunAt(uint64_t i, uint64_t max) const {
  if (dense) return dense->LocateRun(i, max);
  CellRun run;
  const uint64_t n = std::min<uint64_t>(max, cell_count - i);
  if (!runs.empty()) {
    const auto r = RunOf(i);
    const uint64_t end = r + 1 != runs.end() ? (r + 1)->first : cell_count;
    run.ref = RefOf(r->second + (i - r->first));
    run.count = std::min(n, end - i);
    return run;
  }
  uint64_t k = 1;
  uint64_t o;
  if (packing) {
    const uint64_t* p = packed.data() + i;
    o = packing->OrdinalOf(p[0]);
    while (k < n && packing->OrdinalOf(p[k]) == o + k) ++k;
  } else {
    const uint64_t* p = ordinals.data() + i;
    o = p[0];
    while (k < n && p[k] == o + k) ++k;
  }
  run.ref = RefOf(o);
  run.count = k;
  return run;
}

uint64_t CellIndex::footprint() const {
  uint64_t bytes = sizeof(*this) + sparse_tiles.size() * sizeof(SparseTile) +
                   (ordinals.size() + packed.size() + 2 * runs.size()) * 8;
  for (const Column& c : dims) bytes += c.data.size() + c.offsets.size() * 8 + c.validity.size();
  return bytes;
}

}  // namespace tiledbfs::core
