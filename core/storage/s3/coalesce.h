// Planning the GETs of a batch of ranged reads (S3Storage::ReadMany): ranges
// of one file that touch or lie close are fetched by one GET, the gap read
// through, and a large batch is cut into about as many GETs as may run at
// once, so that coalescing does not serialize what parallel GETs would
// fetch side by side. Pure: no I/O (unit-tested without a server).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/storage/storage.h"

namespace tiledbfs::core::s3 {

struct CoalesceOptions {
  uint64_t gap = uint64_t{64} << 10;        // read through gaps up to this
  uint64_t max_bytes = uint64_t{16} << 20;  // no GET grows past this by merging
  // The batch's bytes are spread over this many GETs where ranges allow,
  // but no GET is cut below min_bytes by that rule.
  unsigned parallel = 16;
  uint64_t min_bytes = uint64_t{256} << 10;
};

// One GET: [begin, end) of `path`, serving the requests `members` (indices
// into the batch), each wholly inside it.
struct PlannedGet {
  std::string path;
  uint64_t begin = 0, end = 0;
  std::vector<size_t> members;
};

// The GETs for `requests`, by path then offset. Every request whose range
// does not overflow is a member of exactly one GET; the indices of those
// that overflow (offset + n > UINT64_MAX) go to `overflowed`. Empty requests
// (n 0) are members too. A GET of more than one request spans at most
// target = clamp(ceil(total / parallel), min_bytes, max_bytes) bytes, total
// being the sum of the requests' sizes; a GET of one spans just it.
std::vector<PlannedGet> PlanGets(std::span<const ReadRequest> requests,
                                 const CoalesceOptions& options, std::vector<size_t>* overflowed);

}  // namespace tiledbfs::core::s3
