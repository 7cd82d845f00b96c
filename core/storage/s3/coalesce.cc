#include "core/storage/s3/coalesce.h"

#include <algorithm>
#include <numeric>

namespace tiledbfs::core::s3 {

std::vector<PlannedGet> PlanGets(std::span<const ReadRequest> requests,
                                 const CoalesceOptions& options, std::vector<size_t>* overflowed) {
  std::vector<size_t> order;
  order.reserve(requests.size());
  uint64_t total = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const ReadRequest& r = requests[i];
    if (r.offset > UINT64_MAX - r.n) {
      if (overflowed != nullptr) overflowed->push_back(i);
      continue;
    }
    total = r.n > UINT64_MAX - total ? UINT64_MAX : total + r.n;
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const ReadRequest& x = requests[a];
    const ReadRequest& y = requests[b];
    return x.path != y.path ? x.path < y.path : x.offset < y.offset;
  });
  const unsigned parallel = std::max(1u, options.parallel);
  const uint64_t share = total / parallel + (total % parallel != 0 ? 1 : 0);
  const uint64_t target =
      std::clamp(share, std::min(options.min_bytes, options.max_bytes), options.max_bytes);
  std::vector<PlannedGet> gets;
  for (size_t i : order) {
    const ReadRequest& r = requests[i];
    const uint64_t end = r.offset + r.n;
    if (!gets.empty()) {
      PlannedGet& g = gets.back();
      // Gap and size compared without overflow: offsets are sorted, so
      // r.offset >= g.begin.
      const bool near = r.offset <= g.end || r.offset - g.end <= options.gap;
      if (g.path == r.path && near && std::max(g.end, end) - g.begin <= target) {
        g.end = std::max(g.end, end);
        g.members.push_back(i);
        continue;
      }
    }
    gets.push_back({r.path, r.offset, end, {i}});
  }
  return gets;
}

}  // namespace tiledbfs::core::s3
