// SCALE_FLOAT (format_spec/filters/float_scale.md). Metadata: uint32 parts,
// uint32 length of each part; the rest belongs to the next stage. Each part
// holds signed integers of `byte width` bytes; each becomes the input float
// type (by size: 4 float32, 8 float64) as TileDB computes it:
// (T)(scale * (double)(T)stored + offset).
//
// TileDB reverses every part from the start of the input and prepends each
// output part; with one part (the only case its writer produces: this filter
// accepts only float input, which no other filter outputs) that is the same
// as the sequential reading done here.
#include <fmt/format.h>

#include <cstring>

#include "core/filters/filter_stage.h"

namespace tiledbfs::core::filters {

namespace {

template <class T, class W>
void Unscale(const uint8_t* src, uint64_t n, double scale, double offset, uint8_t* dst) {
  for (uint64_t i = 0; i < n; ++i) {
    W w;
    std::memcpy(&w, src + i * sizeof(W), sizeof(W));
    T elem = static_cast<T>(w);
    T v = static_cast<T>(scale * elem + offset);
    std::memcpy(dst + i * sizeof(T), &v, sizeof(T));
  }
}

template <class T>
void UnscaleAs(uint64_t width, const uint8_t* src, uint64_t n, double scale, double offset,
               uint8_t* dst) {
  switch (width) {
    case 1:
      return Unscale<T, int8_t>(src, n, scale, offset, dst);
    case 2:
      return Unscale<T, int16_t>(src, n, scale, offset, dst);
    case 4:
      return Unscale<T, int32_t>(src, n, scale, offset, dst);
    default:
      return Unscale<T, int64_t>(src, n, scale, offset, dst);
  }
}

}  // namespace

Result<StageOutput> ReverseScaleFloat(const StageContext& ctx, Bytes metadata, Bytes data) {
  const Filter& f = *ctx.filter;
  const uint64_t ts = DatatypeSize(ctx.type);
  const uint64_t w = f.scale_byte_width;
  if (ts != 4 && ts != 8) {
    return Error::Corrupt(
        fmt::format("SCALE_FLOAT: cannot apply to {} values", DatatypeName(ctx.type)));
  }
  if (w != 1 && w != 2 && w != 4 && w != 8) {
    return Error::Corrupt(fmt::format("SCALE_FLOAT: invalid byte width {}", w));
  }
  ByteReader md(metadata);
  ASSIGN_OR_RETURN(uint32_t parts, md.Read<uint32_t>("SCALE_FLOAT: number of parts"));
  if (parts > md.remaining() / 4) {
    return md.Corrupt("SCALE_FLOAT: parts",
                      fmt::format("{} parts cannot fit in {} bytes", parts, md.remaining()));
  }
  ByteReader in(data);
  StageOutput out;
  for (uint32_t p = 0; p < parts; ++p) {
    ASSIGN_OR_RETURN(uint32_t len, md.Read<uint32_t>("SCALE_FLOAT: part length"));
    if (len % w != 0) {
      return md.Corrupt("SCALE_FLOAT: part length",
                        fmt::format("{} is not a multiple of the byte width {}", len, w));
    }
    ASSIGN_OR_RETURN(Bytes src, in.ReadBytes(len, "SCALE_FLOAT: part"));
    const uint64_t n = len / w;
    if (n * ts > ctx.capacity - out.data.size()) {
      return Error::Corrupt(
          fmt::format("SCALE_FLOAT: values exceed the expected {} bytes", ctx.capacity));
    }
    const size_t at = out.data.size();
    out.data.resize(at + n * ts);
    if (ts == 4) {
      UnscaleAs<float>(w, src.data(), n, f.scale_factor, f.scale_offset, out.data.data() + at);
    } else {
      UnscaleAs<double>(w, src.data(), n, f.scale_factor, f.scale_offset, out.data.data() + at);
    }
  }
  if (!in.empty()) {
    return in.Corrupt("SCALE_FLOAT", fmt::format("{} bytes after the parts", in.remaining()));
  }
  out.metadata.assign(md.rest().begin(), md.rest().end());
  return out;
}

}  // namespace tiledbfs::core::filters
