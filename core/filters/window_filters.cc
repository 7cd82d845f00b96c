// BIT_WIDTH_REDUCTION and POSITIVE_DELTA (tile.md). Both split each part
// into windows of at most `max window size` bytes and describe every window
// in the metadata; the rest of the metadata belongs to the next stage.
//
// BIT_WIDTH_REDUCTION metadata: uint32 original length, uint32 windows, then
//   per window: offset (T), uint8 bit width, uint32 window length in bytes.
//   A window whose bit width is >= 8*sizeof(T), or whose length is not a
//   multiple of sizeof(T), is stored as is; otherwise it holds its values
//   minus the offset, each in bit width / 8 bytes (sign-extended for signed
//   T), and `window length` is the length of the original values.
// POSITIVE_DELTA metadata: uint32 windows, then per window: first value (T),
//   uint32 window length. Window data: the differences to the previous value
//   (the first against the window's first value, so 0), each sizeof(T);
//   stored as is when the length is not a multiple of sizeof(T).
// T is the filter's input type. Types these filters do not transform pass
// through unchanged: for BIT_WIDTH_REDUCTION any one-byte type, float and
// string; for POSITIVE_DELTA float and string types. Datetime and time types
// are transformed (as int64) only by format version 20 and later.
#include <fmt/format.h>

#include <cstring>

#include "core/filters/filter_stage.h"

namespace tiledbfs::core::filters {

namespace {

struct ValueType {
  uint64_t size = 0;  // 0: the filter leaves the data alone
  bool is_signed = false;
};

// Datetime and time values were left alone before version 20.
bool TransformsDatetimes(uint32_t tile_version) { return tile_version >= 20; }

ValueType WindowType(Datatype t, uint32_t tile_version, bool one_byte_types) {
  if (IsDatetime(t) || IsTime(t)) {
    return TransformsDatetimes(tile_version) ? ValueType{8, true} : ValueType{};
  }
  switch (t) {
    case Datatype::kInt8:
      return one_byte_types ? ValueType{1, true} : ValueType{};
    case Datatype::kUInt8:
    case Datatype::kBlob:
    case Datatype::kGeomWkb:
    case Datatype::kGeomWkt:
    case Datatype::kBool:
      return one_byte_types ? ValueType{1, false} : ValueType{};
    case Datatype::kInt16:
      return {2, true};
    case Datatype::kUInt16:
      return {2, false};
    case Datatype::kInt32:
      return {4, true};
    case Datatype::kUInt32:
      return {4, false};
    case Datatype::kInt64:
      return {8, true};
    case Datatype::kUInt64:
      return {8, false};
    default:
      return {};
  }
}

uint64_t Load(const uint8_t* p, uint64_t size, bool sign_extend) {
  uint64_t v = 0;
  std::memcpy(&v, p, size);
  if (sign_extend && size < 8 && (v >> (size * 8 - 1)) & 1) v |= ~uint64_t{0} << (size * 8);
  return v;
}

}  // namespace

Result<StageOutput> ReverseBitWidthReduction(const StageContext& ctx, Bytes metadata, Bytes data) {
  const ValueType vt = WindowType(ctx.type, ctx.tile_version, false);
  if (vt.size == 0) return PassThrough(metadata, data);
  const uint64_t ts = vt.size;
  ByteReader md(metadata);
  ASSIGN_OR_RETURN(uint32_t original, md.Read<uint32_t>("BIT_WIDTH_REDUCTION: original length"));
  ASSIGN_OR_RETURN(uint32_t windows, md.Read<uint32_t>("BIT_WIDTH_REDUCTION: windows"));
  if (windows > md.remaining() / (ts + 5)) {
    return md.Corrupt("BIT_WIDTH_REDUCTION: windows",
                      fmt::format("{} windows cannot fit in {} bytes", windows, md.remaining()));
  }
  if (original > ctx.capacity) {
    return Error::Corrupt(
        fmt::format("BIT_WIDTH_REDUCTION: original length {} exceeds {}", original, ctx.capacity));
  }
  ByteReader in(data);
  StageOutput out;
  out.data.reserve(std::min<uint64_t>(original, data.size() * 8 + 64));
  for (uint32_t w = 0; w < windows; ++w) {
    ASSIGN_OR_RETURN(Bytes off, md.ReadBytes(ts, "BIT_WIDTH_REDUCTION: window offset"));
    ASSIGN_OR_RETURN(uint8_t bits, md.Read<uint8_t>("BIT_WIDTH_REDUCTION: window bit width"));
    ASSIGN_OR_RETURN(uint32_t len, md.Read<uint32_t>("BIT_WIDTH_REDUCTION: window length"));
    if (len > original - out.data.size()) {
      return md.Corrupt("BIT_WIDTH_REDUCTION: window length",
                        fmt::format("windows exceed the original length {}", original));
    }
    if (bits >= ts * 8 || len % ts != 0) {
      ASSIGN_OR_RETURN(Bytes raw, in.ReadBytes(len, "BIT_WIDTH_REDUCTION: window"));
      AppendBytes(out.data, raw);
      continue;
    }
    if (bits != 8 && bits != 16 && bits != 32) {
      return md.Corrupt("BIT_WIDTH_REDUCTION: window bit width",
                        fmt::format("{} is not 8, 16 or 32", bits));
    }
    const uint64_t rs = bits / 8;
    const uint64_t n = len / ts;
    ASSIGN_OR_RETURN(Bytes packed, in.ReadBytes(n * rs, "BIT_WIDTH_REDUCTION: window"));
    const uint64_t offset = Load(off.data(), ts, false);
    const size_t at = out.data.size();
    out.data.resize(at + len);
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t v = Load(packed.data() + i * rs, rs, vt.is_signed) + offset;
      std::memcpy(out.data.data() + at + i * ts, &v, ts);
    }
  }
  if (out.data.size() != original) {
    return Error::Corrupt(fmt::format("BIT_WIDTH_REDUCTION: windows hold {} bytes, expected {}",
                                      out.data.size(), original));
  }
  if (!in.empty()) {
    return in.Corrupt("BIT_WIDTH_REDUCTION",
                      fmt::format("{} bytes after the last window", in.remaining()));
  }
  out.metadata.assign(md.rest().begin(), md.rest().end());
  return out;
}

Result<StageOutput> ReversePositiveDelta(const StageContext& ctx, Bytes metadata, Bytes data) {
  const ValueType vt = WindowType(ctx.type, ctx.tile_version, true);
  if (vt.size == 0) return PassThrough(metadata, data);
  const uint64_t ts = vt.size;
  ByteReader md(metadata);
  ASSIGN_OR_RETURN(uint32_t windows, md.Read<uint32_t>("POSITIVE_DELTA: windows"));
  if (windows > md.remaining() / (ts + 4)) {
    return md.Corrupt("POSITIVE_DELTA: windows",
                      fmt::format("{} windows cannot fit in {} bytes", windows, md.remaining()));
  }
  if (data.size() > ctx.capacity) {
    return Error::Corrupt(
        fmt::format("POSITIVE_DELTA: {} bytes exceed the expected {}", data.size(), ctx.capacity));
  }
  ByteReader in(data);
  StageOutput out;
  out.data.resize(data.size());
  uint64_t at = 0;
  for (uint32_t w = 0; w < windows; ++w) {
    ASSIGN_OR_RETURN(Bytes first, md.ReadBytes(ts, "POSITIVE_DELTA: window value"));
    ASSIGN_OR_RETURN(uint32_t len, md.Read<uint32_t>("POSITIVE_DELTA: window length"));
    ASSIGN_OR_RETURN(Bytes src, in.ReadBytes(len, "POSITIVE_DELTA: window"));
    uint8_t* dst = out.data.data() + at;
    at += len;
    if (len % ts != 0) {
      std::memcpy(dst, src.data(), len);
      continue;
    }
    uint64_t v = Load(first.data(), ts, false);
    for (uint64_t i = 0; i < len / ts; ++i) {
      v += Load(src.data() + i * ts, ts, false);
      std::memcpy(dst + i * ts, &v, ts);
    }
  }
  if (!in.empty()) {
    return in.Corrupt("POSITIVE_DELTA",
                      fmt::format("{} bytes after the last window", in.remaining()));
  }
  out.metadata.assign(md.rest().begin(), md.rest().end());
  return out;
}

}  // namespace tiledbfs::core::filters
