// XOR (format_spec/filters/xor.md). Metadata: uint32 parts, uint32 length of
// each part; the rest belongs to the next stage. In each part, values of the
// input type's size (1, 2, 4 or 8 bytes) are stored as the first value, then
// each value XOR the previous one.
#include <fmt/format.h>

#include <cstring>

#include "core/filters/filter_stage.h"

namespace tiledbfs::core::filters {

Result<StageOutput> ReverseXor(const StageContext& ctx, Bytes metadata, Bytes data) {
  const uint64_t ts = DatatypeSize(ctx.type);
  if (ts != 1 && ts != 2 && ts != 4 && ts != 8) {
    return Error::Corrupt(fmt::format("XOR: cannot apply to {} values", DatatypeName(ctx.type)));
  }
  ByteReader md(metadata);
  ASSIGN_OR_RETURN(uint32_t parts, md.Read<uint32_t>("XOR: number of parts"));
  if (parts > md.remaining() / 4) {
    return md.Corrupt("XOR: parts",
                      fmt::format("{} parts cannot fit in {} bytes", parts, md.remaining()));
  }
  if (data.size() > ctx.capacity) {
    return Error::Corrupt(
        fmt::format("XOR: {} bytes exceed the expected {}", data.size(), ctx.capacity));
  }
  ByteReader in(data);
  StageOutput out;
  out.data.resize(data.size());
  uint64_t at = 0;
  for (uint32_t p = 0; p < parts; ++p) {
    ASSIGN_OR_RETURN(uint32_t len, md.Read<uint32_t>("XOR: part length"));
    if (len % ts != 0) {
      return md.Corrupt("XOR: part length",
                        fmt::format("{} is not a multiple of the value size {}", len, ts));
    }
    ASSIGN_OR_RETURN(Bytes src, in.ReadBytes(len, "XOR: part"));
    uint64_t prev = 0;
    for (uint64_t i = 0; i < len / ts; ++i) {
      uint64_t v = 0;
      std::memcpy(&v, src.data() + i * ts, ts);
      prev = i == 0 ? v : prev ^ v;
      std::memcpy(out.data.data() + at + i * ts, &prev, ts);
    }
    at += len;
  }
  if (!in.empty()) {
    return in.Corrupt("XOR", fmt::format("{} bytes after the parts", in.remaining()));
  }
  out.metadata.assign(md.rest().begin(), md.rest().end());
  return out;
}

}  // namespace tiledbfs::core::filters
