// The compression filters (GZIP, ZSTD, LZ4, BZIP2 and TileDB's own RLE,
// DOUBLE_DELTA, DELTA, DICTIONARY) share one chunk layout (tile.md,
// "Compression Filters"):
//   metadata: uint32 metadata parts, uint32 data parts, then per part
//             uint32 original length, uint32 compressed length
//   data:     the compressed metadata parts, then the compressed data parts
// The decompressed metadata parts become the next stage's metadata.
//
// Var-sized strings under RLE or DICTIONARY (when the offsets are not stored,
// SkipsOffsetsFiltering) use another layout (TileDB
// CompressionFilter::compress_var_string_coords):
//   metadata: uint32 0, uint32 1, uint32 original length, uint32 compressed
//             length, uint32 offsets bytes (8 per cell), then
//             RLE:  uint8 run length bytes, uint8 string length bytes
//             DICT: uint8 id bytes, uint8 string length bytes,
//                   uint32 dictionary bytes, dictionary
#include <bzlib.h>
#include <fmt/format.h>
#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <memory>

#include "core/filters/filter_stage.h"

namespace tiledbfs::core::filters {

namespace {

constexpr uint64_t kMinStep = 64 * 1024;

// Output window management shared by the streaming decoders: the buffer
// grows geometrically as bytes are produced, never straight to `declared`.
class GrowingOutput {
 public:
  GrowingOutput(ByteVec* out, uint64_t declared, uint64_t input_size)
      : out_(out),
        start_(out->size()),
        declared_(declared),
        step_(std::max<uint64_t>(kMinStep, input_size * 4)) {}

  // Makes room for more output; returns the writable window.
  std::pair<uint8_t*, uint64_t> Window() {
    uint64_t have = out_->size() - start_;
    if (produced_ == have) {
      uint64_t grow = std::min(declared_ - have, step_);
      step_ *= 2;
      out_->resize(out_->size() + grow);
      have += grow;
    }
    return {out_->data() + start_ + produced_, have - produced_};
  }
  void Advance(uint64_t n) { produced_ += n; }
  uint64_t produced() const { return produced_; }
  bool full() const { return produced_ == declared_; }
  void Finish() { out_->resize(start_ + produced_); }

 private:
  ByteVec* out_;
  uint64_t start_;
  uint64_t declared_;
  uint64_t step_;
  uint64_t produced_ = 0;
};

Error SizeMismatch(std::string_view codec, uint64_t produced, uint64_t declared) {
  return Error::Corrupt(
      fmt::format("{}: decompressed to {} bytes, expected {}", codec, produced, declared));
}
Error TooLong(std::string_view codec, uint64_t declared) {
  return Error::Corrupt(
      fmt::format("{}: decompresses to more than the expected {} bytes", codec, declared));
}

bool IsVarStringCompressor(const StageContext& ctx) {
  FilterType t = ctx.filter->type;
  return ctx.var_offsets != nullptr && (t == FilterType::kRle || t == FilterType::kDictionary) &&
         (ctx.type == Datatype::kStringAscii || ctx.type == Datatype::kStringUtf8) &&
         ctx.pipeline_version >= 12;
}

Result<StageOutput> ReverseVarStrings(const StageContext& ctx, ByteReader& md, Bytes data) {
  const std::string name(FilterName(ctx.filter->type));
  ASSIGN_OR_RETURN(uint32_t original, md.Read<uint32_t>(name + ": original length"));
  ASSIGN_OR_RETURN(uint32_t compressed, md.Read<uint32_t>(name + ": compressed length"));
  ASSIGN_OR_RETURN(uint32_t offsets_bytes, md.Read<uint32_t>(name + ": offsets length"));
  if (original > ctx.capacity) {
    return Error::Corrupt(
        fmt::format("{}: original length {} exceeds {}", name, original, ctx.capacity));
  }
  if (compressed > data.size()) {
    return Error::Corrupt(fmt::format("{}: compressed length {} but {} bytes of data", name,
                                      compressed, data.size()));
  }
  Bytes in = data.first(compressed);
  const uint64_t max_cells = offsets_bytes / 8;
  StageOutput out;
  const size_t first_offset = ctx.var_offsets->size();
  if (ctx.filter->type == FilterType::kRle) {
    ASSIGN_OR_RETURN(uint8_t run_bytes, md.Read<uint8_t>("RLE: run length size"));
    ASSIGN_OR_RETURN(uint8_t len_bytes, md.Read<uint8_t>("RLE: string length size"));
    TRY(DecodeStringRle(in, run_bytes, len_bytes, original, &out.data, ctx.var_offsets, max_cells));
  } else {
    ASSIGN_OR_RETURN(uint8_t id_bytes, md.Read<uint8_t>("DICTIONARY: id size"));
    ASSIGN_OR_RETURN(uint8_t len_bytes, md.Read<uint8_t>("DICTIONARY: string length size"));
    ASSIGN_OR_RETURN(uint32_t dict_size, md.Read<uint32_t>("DICTIONARY: dictionary size"));
    ASSIGN_OR_RETURN(Bytes dict, md.ReadBytes(dict_size, "DICTIONARY: dictionary"));
    TRY(DecodeStringDictionary(in, dict, id_bytes, len_bytes, original, &out.data, ctx.var_offsets,
                               max_cells));
  }
  uint64_t cells = ctx.var_offsets->size() - first_offset;
  if (cells * 8 != offsets_bytes) {
    return Error::Corrupt(
        fmt::format("{}: decoded {} cells, the metadata says {}", name, cells, max_cells));
  }
  return out;
}

Status DecodePart(const StageContext& ctx, Bytes in, uint64_t declared, ByteVec* out) {
  const Filter& f = *ctx.filter;
  switch (f.type) {
    case FilterType::kGzip:
      return DecodeGzip(in, declared, out);
    case FilterType::kZstd:
      return DecodeZstd(in, declared, out);
    case FilterType::kLz4:
      return DecodeLz4(in, declared, out);
    case FilterType::kBzip2:
      return DecodeBzip2(in, declared, out);
    case FilterType::kRle:
      return DecodeRle(in, ctx.cell_size, declared, out);
    case FilterType::kDoubleDelta:
      return DecodeDoubleDelta(in, f.reinterpret_datatype.value_or(ctx.type), declared, out);
    case FilterType::kDelta:
      return DecodeDelta(in, f.reinterpret_datatype.value_or(ctx.type), declared, out);
    case FilterType::kDictionary:
      // TileDB applies DICTIONARY only to var-sized strings whose offsets it
      // does not store; anywhere else its writer fails.
      return Error::Corrupt("DICTIONARY: only applies to var-sized strings without offsets");
    default:
      return Error::Unsupported(fmt::format("{}: not a compressor", FilterName(f.type)));
  }
}

}  // namespace

Result<StageOutput> ReverseCompression(const StageContext& ctx, Bytes metadata, Bytes data) {
  const std::string name(FilterName(ctx.filter->type));
  ByteReader md(metadata);
  ASSIGN_OR_RETURN(uint32_t md_parts, md.Read<uint32_t>(name + ": number of metadata parts"));
  ASSIGN_OR_RETURN(uint32_t data_parts, md.Read<uint32_t>(name + ": number of data parts"));
  if (IsVarStringCompressor(ctx)) return ReverseVarStrings(ctx, md, data);

  const uint64_t parts = uint64_t{md_parts} + data_parts;
  if (parts > md.remaining() / 8) {
    return md.Corrupt(name + ": parts",
                      fmt::format("{} parts cannot fit in {} bytes", parts, md.remaining()));
  }
  struct Part {
    uint32_t original;
    uint32_t compressed;
  };
  std::vector<Part> sizes(parts);
  uint64_t md_total = 0, data_total = 0;
  for (uint64_t i = 0; i < parts; ++i) {
    ASSIGN_OR_RETURN(sizes[i].original, md.Read<uint32_t>(name + ": part original length"));
    ASSIGN_OR_RETURN(sizes[i].compressed, md.Read<uint32_t>(name + ": part compressed length"));
    (i < md_parts ? md_total : data_total) += sizes[i].original;
  }
  if (!md.empty()) {
    return md.Corrupt(name, fmt::format("{} unexpected metadata bytes", md.remaining()));
  }
  if (md_total > ctx.capacity || data_total > ctx.capacity) {
    return Error::Corrupt(
        fmt::format("{}: parts declare {} metadata and {} data bytes, more than "
                    "the {} expected",
                    name, md_total, data_total, ctx.capacity));
  }
  ByteReader in(data);
  StageOutput out;
  // The general-purpose codecs append to their output, so they can decode
  // straight into the tile.
  const FilterType t = ctx.filter->type;
  out.data_in_sink = ctx.sink != nullptr && (t == FilterType::kZstd || t == FilterType::kLz4 ||
                                             t == FilterType::kGzip || t == FilterType::kBzip2);
  for (uint64_t i = 0; i < parts; ++i) {
    ASSIGN_OR_RETURN(Bytes src, in.ReadBytes(sizes[i].compressed, name + ": compressed part"));
    ByteVec* dst = i < md_parts ? &out.metadata : out.data_in_sink ? ctx.sink : &out.data;
    Status s = DecodePart(ctx, src, sizes[i].original, dst);
    if (!s.ok()) {
      return s.error().WithContext(fmt::format("{} part {}", i < md_parts ? "metadata" : "data",
                                               i < md_parts ? i : i - md_parts));
    }
  }
  if (!in.empty()) {
    return in.Corrupt(name, fmt::format("{} bytes after the compressed parts", in.remaining()));
  }
  return out;
}

Status DecodeZstd(Bytes in, uint64_t declared, ByteVec* out) {
  if (in.empty() && declared == 0) return Ok();
  // One context per thread, reset per frame: creating one costs more than
  // decoding a small chunk.
  thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> d(ZSTD_createDCtx(),
                                                                    ZSTD_freeDCtx);
  if (!d) return Error::OutOfMemory("ZSTD: cannot create a decompression context");
  ZSTD_DCtx_reset(d.get(), ZSTD_reset_session_only);
  // A frame that states its size must state the expected one.
  unsigned long long stated = ZSTD_getFrameContentSize(in.data(), in.size());
  if (stated != ZSTD_CONTENTSIZE_UNKNOWN && stated != ZSTD_CONTENTSIZE_ERROR && stated > declared) {
    return Error::Corrupt(
        fmt::format("ZSTD: frame content size {}, expected {}", stated, declared));
  }
  GrowingOutput g(out, declared, in.size());
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  bool finished = false;
  while (!g.full()) {
    auto [ptr, room] = g.Window();
    ZSTD_outBuffer ob{ptr, room, 0};
    size_t ret = ZSTD_decompressStream(d.get(), &ob, &ib);
    if (ZSTD_isError(ret)) {
      g.Finish();
      return Error::Corrupt(fmt::format("ZSTD: {}", ZSTD_getErrorName(ret)));
    }
    g.Advance(ob.pos);
    if (ret == 0 && ib.pos == ib.size) {
      finished = true;
      break;
    }
    if (ob.pos < ob.size && ib.pos == ib.size) {
      g.Finish();
      return Error::Corrupt("ZSTD: compressed data ends inside a frame (truncated)");
    }
  }
  g.Finish();
  if (!finished) {
    uint8_t scratch;
    ZSTD_outBuffer ob{&scratch, 1, 0};
    size_t ret = ZSTD_decompressStream(d.get(), &ob, &ib);
    if (ZSTD_isError(ret)) return Error::Corrupt(fmt::format("ZSTD: {}", ZSTD_getErrorName(ret)));
    if (ob.pos != 0) return TooLong("ZSTD", declared);
    if (ret != 0 || ib.pos != ib.size) {
      return Error::Corrupt("ZSTD: compressed data ends inside a frame (truncated)");
    }
  }
  if (g.produced() != declared) return SizeMismatch("ZSTD", g.produced(), declared);
  return Ok();
}

Status DecodeGzip(Bytes in, uint64_t declared, ByteVec* out) {
  // TileDB's GZIP filter writes a zlib stream (deflateInit, inflateInit).
  z_stream s{};
  if (inflateInit(&s) != Z_OK) return Error::OutOfMemory("GZIP: cannot initialise zlib");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&s, inflateEnd);
  s.next_in = const_cast<Bytef*>(in.data());
  s.avail_in = static_cast<uInt>(in.size());  // parts are at most 4 GiB - 1
  GrowingOutput g(out, declared, in.size());
  auto zerr = [&](int rc) {
    return Error::Corrupt(fmt::format("GZIP: {}", s.msg ? s.msg : zError(rc)));
  };
  bool finished = false;
  while (!g.full()) {
    auto [ptr, room] = g.Window();
    s.next_out = ptr;
    s.avail_out = static_cast<uInt>(std::min<uint64_t>(room, UINT32_MAX));
    uInt before = s.avail_out;
    int rc = inflate(&s, Z_NO_FLUSH);
    g.Advance(before - s.avail_out);
    if (rc == Z_STREAM_END) {
      finished = true;
      break;
    }
    if (rc == Z_BUF_ERROR || (rc == Z_OK && s.avail_in == 0 && s.avail_out != 0)) {
      g.Finish();
      return Error::Corrupt("GZIP: compressed data ends inside the stream (truncated)");
    }
    if (rc != Z_OK) {
      g.Finish();
      return zerr(rc);
    }
  }
  g.Finish();
  if (!finished) {
    uint8_t scratch;
    s.next_out = &scratch;
    s.avail_out = 1;
    int rc = inflate(&s, Z_NO_FLUSH);
    if (s.avail_out == 0) return TooLong("GZIP", declared);
    if (rc != Z_STREAM_END) {
      if (rc == Z_OK || rc == Z_BUF_ERROR) {
        return Error::Corrupt("GZIP: compressed data ends inside the stream (truncated)");
      }
      return zerr(rc);
    }
  }
  if (g.produced() != declared) return SizeMismatch("GZIP", g.produced(), declared);
  return Ok();
}

namespace {
std::string_view Bzip2ErrorName(int rc) {
  switch (rc) {
    case BZ_SEQUENCE_ERROR:
      return "BZ_SEQUENCE_ERROR";
    case BZ_PARAM_ERROR:
      return "BZ_PARAM_ERROR";
    case BZ_MEM_ERROR:
      return "BZ_MEM_ERROR (out of memory)";
    case BZ_DATA_ERROR:
      return "BZ_DATA_ERROR (integrity check failed)";
    case BZ_DATA_ERROR_MAGIC:
      return "BZ_DATA_ERROR_MAGIC (not a bzip2 stream)";
    case BZ_UNEXPECTED_EOF:
      return "BZ_UNEXPECTED_EOF";
    default:
      return "error";
  }
}
}  // namespace

Status DecodeBzip2(Bytes in, uint64_t declared, ByteVec* out) {
  bz_stream s{};
  if (BZ2_bzDecompressInit(&s, 0, 0) != BZ_OK) {
    return Error::OutOfMemory("BZIP2: cannot initialise libbz2");
  }
  std::unique_ptr<bz_stream, int (*)(bz_stream*)> guard(&s, BZ2_bzDecompressEnd);
  s.next_in = reinterpret_cast<char*>(const_cast<uint8_t*>(in.data()));
  s.avail_in = static_cast<unsigned>(in.size());
  GrowingOutput g(out, declared, in.size());
  bool finished = false;
  while (!g.full()) {
    auto [ptr, room] = g.Window();
    s.next_out = reinterpret_cast<char*>(ptr);
    s.avail_out = static_cast<unsigned>(std::min<uint64_t>(room, UINT32_MAX));
    unsigned before = s.avail_out;
    int rc = BZ2_bzDecompress(&s);
    g.Advance(before - s.avail_out);
    if (rc == BZ_STREAM_END) {
      finished = true;
      break;
    }
    if (rc != BZ_OK) {
      g.Finish();
      return Error::Corrupt(fmt::format("BZIP2: {}", Bzip2ErrorName(rc)));
    }
    if (s.avail_in == 0 && s.avail_out != 0) {
      g.Finish();
      return Error::Corrupt("BZIP2: compressed data ends inside the stream (truncated)");
    }
  }
  g.Finish();
  if (!finished) {
    char scratch;
    s.next_out = &scratch;
    s.avail_out = 1;
    int rc = BZ2_bzDecompress(&s);
    if (s.avail_out == 0) return TooLong("BZIP2", declared);
    if (rc != BZ_STREAM_END) {
      if (rc == BZ_OK) {
        return Error::Corrupt("BZIP2: compressed data ends inside the stream (truncated)");
      }
      return Error::Corrupt(fmt::format("BZIP2: {}", Bzip2ErrorName(rc)));
    }
  }
  if (g.produced() != declared) return SizeMismatch("BZIP2", g.produced(), declared);
  return Ok();
}

Status DecodeLz4(Bytes in, uint64_t declared, ByteVec* out) {
  // An LZ4 block expands at most 255-fold: a larger claim is a lie, refused
  // before allocating.
  if (declared > uint64_t{in.size()} * 255 + 16 || declared > uint64_t{INT32_MAX} ||
      in.size() > uint64_t{INT32_MAX}) {
    return Error::Corrupt(
        fmt::format("LZ4: {} compressed bytes cannot hold {} bytes", in.size(), declared));
  }
  const size_t start = out->size();
  out->resize(start + declared);
  int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()),
                              reinterpret_cast<char*>(out->data() + start),
                              static_cast<int>(in.size()), static_cast<int>(declared));
  if (n < 0) {
    out->resize(start);
    return Error::Corrupt(fmt::format("LZ4: malformed block (LZ4_decompress_safe returned {})", n));
  }
  if (static_cast<uint64_t>(n) != declared) {
    out->resize(start);
    return SizeMismatch("LZ4", n, declared);
  }
  return Ok();
}

}  // namespace tiledbfs::core::filters
