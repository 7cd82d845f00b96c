#include "core/filters/filter_stage.h"

#include <fmt/format.h>

namespace tiledbfs::core::filters {

namespace {

Datatype IntegerOfSize(uint64_t size, Datatype fallback) {
  switch (size) {
    case 1:
      return Datatype::kInt8;
    case 2:
      return Datatype::kInt16;
    case 4:
      return Datatype::kInt32;
    case 8:
      return Datatype::kInt64;
    default:
      return fallback;
  }
}

}  // namespace

Datatype FilterOutputType(const Filter& f, Datatype input) {
  switch (f.type) {
    case FilterType::kDoubleDelta:
    case FilterType::kDelta:
      return f.reinterpret_datatype.value_or(input);
    case FilterType::kScaleFloat:
      return IntegerOfSize(f.scale_byte_width, input);
    case FilterType::kXor:
      return IntegerOfSize(DatatypeSize(input), input);
    case FilterType::kEncryptionAes256Gcm:
      return Datatype::kBlob;
    default:
      return input;
  }
}

Status AppendCapped(ByteVec* out, Bytes b, uint64_t capacity, std::string_view what) {
  if (b.size() > capacity || out->size() > capacity - b.size()) {
    return Error::Corrupt(fmt::format("{}: output would exceed {} bytes", what, capacity));
  }
  AppendBytes(*out, b);
  return Ok();
}

Result<StageOutput> ReverseFilter(const StageContext& ctx, Bytes metadata, Bytes data) {
  switch (ctx.filter->type) {
    case FilterType::kNone:
      return PassThrough(metadata, data);
    case FilterType::kGzip:
    case FilterType::kZstd:
    case FilterType::kLz4:
    case FilterType::kRle:
    case FilterType::kBzip2:
    case FilterType::kDoubleDelta:
    case FilterType::kDictionary:
    case FilterType::kDelta:
      return ReverseCompression(ctx, metadata, data);
    case FilterType::kBitWidthReduction:
      return ReverseBitWidthReduction(ctx, metadata, data);
    case FilterType::kBitshuffle:
      return ReverseBitshuffle(ctx, metadata, data);
    case FilterType::kByteshuffle:
      return ReverseByteshuffle(ctx, metadata, data);
    case FilterType::kPositiveDelta:
      return ReversePositiveDelta(ctx, metadata, data);
    case FilterType::kEncryptionAes256Gcm:
      return ReverseEncryption(ctx, metadata, data);
    case FilterType::kChecksumMd5:
    case FilterType::kChecksumSha256:
      return ReverseChecksum(ctx, metadata, data);
    case FilterType::kScaleFloat:
      return ReverseScaleFloat(ctx, metadata, data);
    case FilterType::kXor:
      return ReverseXor(ctx, metadata, data);
    case FilterType::kWebp:
      return Error::Unsupported("unsupported filter WEBP");
    case FilterType::kDeprecated:
      break;
  }
  return Error::Unsupported(
      fmt::format("unsupported filter type {}", static_cast<int>(ctx.filter->type)));
}

}  // namespace tiledbfs::core::filters
