#include "core/write/filter_writer.h"

#include <bzlib.h>
#include <fmt/format.h>
#include <lz4.h>
#include <openssl/evp.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace tiledbfs::core {
namespace {

constexpr uint64_t kBitshuffleBlock = 8192;  // as core/filters/shuffle.cc

// Streams a filter produces: metadata parts and data parts (TileDB's
// FilterBuffer lists). The chunk stores each list concatenated.
struct Parts {
  std::vector<ByteVec> md;
  std::vector<ByteVec> data;
};

ByteVec Concat(const std::vector<ByteVec>& parts) {
  ByteVec out;
  for (const ByteVec& p : parts) AppendBytes(out, p);
  return out;
}

// zlib's compress2, on deflate streams kept per thread and level: the same
// bytes without setting up a stream (256 KiB) for every chunk and generic
// tile, which dominated writing many small fragments.
bool Deflate(Bytes in, int level, uint8_t* out, uLongf* out_size) {
  struct Streams {
    z_stream s[11];
    bool init[11] = {};
    ~Streams() {
      for (int i = 0; i < 11; ++i)
        if (init[i]) deflateEnd(&s[i]);
    }
  };
  thread_local Streams streams;
  const int slot = level + 1;  // Z_DEFAULT_COMPRESSION (-1) .. 9
  if (slot < 0 || slot > 10 || in.size() > UINT32_MAX || *out_size > UINT32_MAX) return false;
  z_stream& z = streams.s[slot];
  if (!streams.init[slot]) {
    z = z_stream{};
    if (deflateInit(&z, level) != Z_OK) return false;
    streams.init[slot] = true;
  } else if (deflateReset(&z) != Z_OK) {
    return false;
  }
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out;
  z.avail_out = static_cast<uInt>(*out_size);
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) return false;
  *out_size = z.total_out;
  return true;
}

Result<ByteVec> Compress(const Filter& f, Bytes in, uint64_t value_size) {
  int level = f.compression_level;
  ByteVec out;
  switch (f.type) {
    case FilterType::kZstd: {
      if (level < ZSTD_minCLevel()) level = 3;  // TileDB: below the limit means default
      out.resize(ZSTD_compressBound(in.size()));
      // One context per thread: creating one per 64 KiB chunk costs more
      // than compressing it.
      thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(),
                                                                           ZSTD_freeCCtx);
      if (!cctx) return Error::OutOfMemory("ZSTD: cannot create a compression context");
      size_t n = ZSTD_compressCCtx(cctx.get(), out.data(), out.size(), in.data(), in.size(), level);
      if (ZSTD_isError(n))
        return Error::InvalidArgument(std::string("ZSTD: ") + ZSTD_getErrorName(n));
      out.resize(n);
      return out;
    }
    case FilterType::kGzip: {
      if (level < 0 || level > 9) level = Z_DEFAULT_COMPRESSION;
      uLongf n = compressBound(in.size());
      out.resize(n);
      if (!Deflate(in, level, out.data(), &n)) {
        return Error::InvalidArgument("GZIP: compression failed");
      }
      out.resize(n);
      return out;
    }
    case FilterType::kLz4: {
      if (in.size() > static_cast<uint64_t>(LZ4_MAX_INPUT_SIZE)) {
        return Error::InvalidArgument("LZ4: part too large");
      }
      out.resize(LZ4_compressBound(static_cast<int>(in.size())));
      int n = LZ4_compress_default(reinterpret_cast<const char*>(in.data()),
                                   reinterpret_cast<char*>(out.data()), static_cast<int>(in.size()),
                                   static_cast<int>(out.size()));
      if (n <= 0 && !in.empty()) return Error::InvalidArgument("LZ4: compression failed");
      out.resize(n);
      return out;
    }
    case FilterType::kBzip2: {
      if (level < 1 || level > 9) level = 9;  // TileDB's BZip::default_level
      unsigned n = static_cast<unsigned>(in.size() + in.size() / 100 + 600);
      out.resize(n);
      int rc = BZ2_bzBuffToBuffCompress(reinterpret_cast<char*>(out.data()), &n,
                                        const_cast<char*>(reinterpret_cast<const char*>(in.data())),
                                        static_cast<unsigned>(in.size()), level, 0, 0);
      if (rc != BZ_OK) return Error::InvalidArgument(fmt::format("BZIP2: error {}", rc));
      out.resize(n);
      return out;
    }
    case FilterType::kRle: {
      // Runs of equal values of `value_size` bytes: value, uint16 big-endian run.
      if (value_size == 0 || in.size() % value_size != 0) {
        return Error::InvalidArgument("RLE: part is not whole values");
      }
      uint64_t n = in.size() / value_size;
      for (uint64_t i = 0; i < n;) {
        const uint8_t* v = in.data() + i * value_size;
        uint64_t run = 1;
        while (i + run < n && run < 65535 &&
               std::memcmp(v, in.data() + (i + run) * value_size, value_size) == 0) {
          ++run;
        }
        AppendBytes(out, v, value_size);
        out.push_back(static_cast<uint8_t>(run >> 8));
        out.push_back(static_cast<uint8_t>(run & 0xFF));
        i += run;
      }
      return out;
    }
    default:
      return Error::Unsupported(fmt::format("{}: not a compressor", FilterName(f.type)));
  }
}

void ByteShuffle(const uint8_t* src, uint64_t size, uint64_t ts, uint8_t* dst) {
  const uint64_t n = ts == 0 ? 0 : size / ts;
  if (ts <= 1 || n == 0) {
    std::memcpy(dst, src, size);
    return;
  }
  for (uint64_t j = 0; j < ts; ++j) {
    for (uint64_t i = 0; i < n; ++i) dst[j * n + i] = src[i * ts + j];
  }
  std::memcpy(dst + n * ts, src + n * ts, size - n * ts);
}

// Inverse of BitUnshuffleBlock in core/filters/shuffle.cc.
void BitShuffleBlock(const uint8_t* src, uint64_t size, uint64_t ts, uint8_t* dst) {
  uint64_t n = size / ts;
  n -= n % 8;
  const uint64_t row = n / 8;
  std::memset(dst, 0, n * ts);
  for (uint64_t i = 0; i < n; ++i) {
    for (uint64_t j = 0; j < ts; ++j) {
      uint8_t byte = src[i * ts + j];
      for (uint64_t b = 0; b < 8; ++b) {
        if ((byte >> b) & 1) dst[(j * 8 + b) * row + i / 8] |= static_cast<uint8_t>(1u << (i % 8));
      }
    }
  }
  std::memcpy(dst + n * ts, src + n * ts, size - n * ts);
}

// Value size and signedness POSITIVE_DELTA works on (0: passes through), as
// core/filters/window_filters.cc reads it at format version 22.
struct DeltaType {
  uint64_t size = 0;
  bool is_signed = false;
};
DeltaType PositiveDeltaType(Datatype t) {
  if (IsDatetime(t) || IsTime(t)) return {8, true};
  switch (t) {
    case Datatype::kInt8:
      return {1, true};
    case Datatype::kUInt8:
    case Datatype::kBool:
    case Datatype::kBlob:
    case Datatype::kGeomWkb:
    case Datatype::kGeomWkt:
      return {1, false};
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

int64_t LoadSigned(const uint8_t* p, uint64_t size) {
  switch (size) {
    case 1: {
      int8_t v;
      std::memcpy(&v, p, 1);
      return v;
    }
    case 2: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}
uint64_t LoadUnsigned(const uint8_t* p, uint64_t size) {
  uint64_t v = 0;
  std::memcpy(&v, p, size);
  return v;
}

Result<Parts> PositiveDelta(const Filter& f, Datatype type, Parts in) {
  DeltaType dt = PositiveDeltaType(type);
  if (dt.size == 0) return in;
  const uint64_t ts = dt.size;
  uint64_t window = f.max_window_size / ts * ts;
  ByteWriter md;
  md.Put<uint32_t>(0);
  uint32_t windows = 0;
  ByteVec data;
  for (const ByteVec& part : in.data) {
    uint64_t w = window == 0 ? std::max<uint64_t>(part.size(), 1) : window;
    for (uint64_t at = 0; at < part.size(); at += w) {
      uint64_t len = std::min<uint64_t>(w, part.size() - at);
      const uint8_t* src = part.data() + at;
      ++windows;
      if (len % ts != 0) {
        ByteVec zero(ts, 0);
        md.PutBytes(zero);
        md.Put<uint32_t>(static_cast<uint32_t>(len));
        AppendBytes(data, src, len);
        continue;
      }
      md.PutBytes(Bytes(src, ts));
      md.Put<uint32_t>(static_cast<uint32_t>(len));
      for (uint64_t i = 0; i < len / ts; ++i) {
        const uint8_t* cur = src + i * ts;
        const uint8_t* prev = i == 0 ? src : cur - ts;
        bool decreasing = dt.is_signed ? LoadSigned(cur, ts) < LoadSigned(prev, ts)
                                       : LoadUnsigned(cur, ts) < LoadUnsigned(prev, ts);
        if (decreasing) {
          return Error::InvalidArgument("POSITIVE_DELTA: values must not decrease within a tile");
        }
        uint64_t d = LoadUnsigned(cur, ts) - LoadUnsigned(prev, ts);
        AppendBytes(data, reinterpret_cast<const uint8_t*>(&d), ts);
      }
    }
  }
  std::memcpy(md.bytes().data(), &windows, 4);
  Parts out;
  out.md.push_back(md.Take());
  for (ByteVec& m : in.md) out.md.push_back(std::move(m));
  out.data.push_back(std::move(data));
  return out;
}

Result<ByteVec> Digest(FilterType t, Bytes b) {
  const EVP_MD* algo = t == FilterType::kChecksumMd5 ? EVP_md5() : EVP_sha256();
  uint8_t out[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (EVP_Digest(b.data(), b.size(), out, &len, algo, nullptr) != 1) {
    return Error::InvalidArgument(fmt::format("{}: digest failed", FilterName(t)));
  }
  return ByteVec(out, out + len);
}

Result<Parts> RunForward(const Filter& f, Datatype type, uint64_t cell_size, Parts in) {
  switch (f.type) {
    case FilterType::kNone:
      return in;
    case FilterType::kGzip:
    case FilterType::kZstd:
    case FilterType::kLz4:
    case FilterType::kBzip2:
    case FilterType::kRle: {
      ByteWriter md;
      md.Put<uint32_t>(static_cast<uint32_t>(in.md.size()));
      md.Put<uint32_t>(static_cast<uint32_t>(in.data.size()));
      ByteVec data;
      auto add = [&](const ByteVec& part) -> Status {
        ASSIGN_OR_RETURN(ByteVec c, Compress(f, part, cell_size));
        md.Put<uint32_t>(static_cast<uint32_t>(part.size()));
        md.Put<uint32_t>(static_cast<uint32_t>(c.size()));
        AppendBytes(data, c);
        return Ok();
      };
      for (const ByteVec& p : in.md) TRY(add(p));
      for (const ByteVec& p : in.data) TRY(add(p));
      Parts out;
      out.md.push_back(md.Take());
      out.data.push_back(std::move(data));
      return out;
    }
    case FilterType::kByteshuffle:
    case FilterType::kBitshuffle: {
      const uint64_t ts = DatatypeSize(type);
      ByteWriter md;
      md.Put<uint32_t>(static_cast<uint32_t>(in.data.size()));
      ByteVec data;
      for (const ByteVec& p : in.data) {
        md.Put<uint32_t>(static_cast<uint32_t>(p.size()));
        ByteVec s(p.size(), 0);
        if (f.type == FilterType::kByteshuffle) {
          ByteShuffle(p.data(), p.size(), ts, s.data());
        } else if (ts == 0 || p.size() % ts != 0 || p.size() % 8 != 0) {
          s = p;
        } else {
          for (uint64_t at = 0; at < p.size(); at += kBitshuffleBlock) {
            uint64_t block = std::min(kBitshuffleBlock, p.size() - at);
            BitShuffleBlock(p.data() + at, block, ts, s.data() + at);
          }
        }
        AppendBytes(data, s);
      }
      Parts out;
      out.md.push_back(md.Take());
      for (ByteVec& m : in.md) out.md.push_back(std::move(m));
      out.data.push_back(std::move(data));
      return out;
    }
    case FilterType::kPositiveDelta:
      return PositiveDelta(f, type, std::move(in));
    case FilterType::kChecksumMd5:
    case FilterType::kChecksumSha256: {
      ByteWriter md;
      md.Put<uint32_t>(static_cast<uint32_t>(in.md.size()));
      md.Put<uint32_t>(static_cast<uint32_t>(in.data.size()));
      for (const auto* list : {&in.md, &in.data}) {
        for (const ByteVec& p : *list) {
          ASSIGN_OR_RETURN(ByteVec d, Digest(f.type, p));
          md.Put<uint64_t>(p.size());
          md.PutBytes(d);
        }
      }
      Parts out;
      out.md.push_back(md.Take());
      for (ByteVec& m : in.md) out.md.push_back(std::move(m));
      out.data = std::move(in.data);
      return out;
    }
    default:
      return Error::Unsupported(
          fmt::format("filter {} cannot be written by tiledb-mkarray", FilterName(f.type)));
  }
}

// Runs the pipeline over one chunk and appends its framing and bytes.
Status FilterChunk(const FilterPipeline& p, Bytes chunk, Datatype type, uint64_t cell_size,
                   ByteWriter& out) {
  Parts parts;
  parts.data.emplace_back(chunk.begin(), chunk.end());
  Datatype t = type;
  for (const Filter& f : p.filters) {
    ASSIGN_OR_RETURN(parts, RunForward(f, t, cell_size, std::move(parts)));
    // None of the writable filters changes the datatype.
  }
  ByteVec md = Concat(parts.md);
  ByteVec data = Concat(parts.data);
  if (chunk.size() > UINT32_MAX || md.size() > UINT32_MAX || data.size() > UINT32_MAX) {
    return Error::InvalidArgument("filtered chunk exceeds 4 GiB");
  }
  out.Put<uint32_t>(static_cast<uint32_t>(chunk.size()));
  out.Put<uint32_t>(static_cast<uint32_t>(data.size()));
  out.Put<uint32_t>(static_cast<uint32_t>(md.size()));
  out.PutBytes(md);
  out.PutBytes(data);
  return Ok();
}

uint64_t ChunkSize(uint64_t tile_size, uint64_t cell_size) {
  if (cell_size == 0) cell_size = 1;
  uint64_t c = std::min(kMaxTileChunkSize, tile_size);
  c = c / cell_size * cell_size;
  return std::max(c, cell_size);
}

Result<ByteVec> FilterChunks(const FilterPipeline& p, Bytes tile, Datatype type, uint64_t cell_size,
                             const std::vector<uint64_t>& starts) {
  ByteWriter out;
  out.Put<uint64_t>(starts.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    uint64_t end = i + 1 < starts.size() ? starts[i + 1] : tile.size();
    TRY(FilterChunk(p, tile.subspan(starts[i], end - starts[i]), type, cell_size, out));
  }
  return out.Take();
}

}  // namespace

void SerializeFilterPipeline(const FilterPipeline& p, ByteWriter& w) {
  w.Put<uint32_t>(p.max_chunk_size);
  w.Put<uint32_t>(static_cast<uint32_t>(p.filters.size()));
  for (const Filter& f : p.filters) {
    ByteWriter o;
    const FilterOptions layout = FilterOptionsOf(f.type);
    switch (layout) {
      case FilterOptions::kNone:
        break;
      case FilterOptions::kCompressor:
      case FilterOptions::kDelta:
        o.Put<uint8_t>(CompressorByte(f.type));
        o.Put<int32_t>(f.compression_level);
        if (layout == FilterOptions::kDelta) {
          o.Put<uint8_t>(static_cast<uint8_t>(f.reinterpret_datatype.value_or(Datatype::kAny)));
        }
        break;
      case FilterOptions::kWindow:
        o.Put<uint32_t>(f.max_window_size);
        break;
      case FilterOptions::kScaleFloat:
        o.Put<double>(f.scale_factor);
        o.Put<double>(f.scale_offset);
        o.Put<uint64_t>(f.scale_byte_width);
        break;
      case FilterOptions::kRaw:
        o.PutBytes(f.raw_options);
        break;
    }
    w.Put<uint8_t>(static_cast<uint8_t>(f.type));
    w.Put<uint32_t>(static_cast<uint32_t>(o.size()));
    w.PutBytes(o.bytes());
  }
}

Status CheckWritablePipeline(const FilterPipeline& p, Datatype type, bool var) {
  for (const Filter& f : p.filters) {
    switch (f.type) {
      case FilterType::kNone:
      case FilterType::kGzip:
      case FilterType::kZstd:
      case FilterType::kLz4:
      case FilterType::kBzip2:
      case FilterType::kByteshuffle:
      case FilterType::kBitshuffle:
      case FilterType::kPositiveDelta:
      case FilterType::kChecksumMd5:
      case FilterType::kChecksumSha256:
        break;
      case FilterType::kRle:
        if (var && IsString(type)) {
          return Error::Unsupported("RLE on var-sized strings cannot be written yet");
        }
        break;
      default:
        return Error::Unsupported(
            fmt::format("filter {} cannot be written yet", FilterName(f.type)));
    }
  }
  return Ok();
}

Result<ByteVec> FilterFixedTile(const FilterPipeline& p, Bytes tile, Datatype type,
                                uint64_t cell_size) {
  std::vector<uint64_t> starts;
  uint64_t c = ChunkSize(tile.size(), cell_size);
  for (uint64_t at = 0; at < tile.size(); at += c) starts.push_back(at);
  return FilterChunks(p, tile, type, cell_size, starts);
}

Result<ByteVec> FilterVarDataTile(const FilterPipeline& p, Bytes tile, Datatype type,
                                  const std::vector<uint64_t>& offsets) {
  const uint64_t value_size = DatatypeSize(type);
  const uint64_t chunk = ChunkSize(tile.size(), value_size);
  std::vector<uint64_t> starts;
  if (!tile.empty()) starts.push_back(0);
  uint64_t current = 0;  // bytes in the open chunk
  for (size_t c = 0; c < offsets.size() && !tile.empty(); ++c) {
    uint64_t end = c + 1 < offsets.size() ? offsets[c + 1] : tile.size();
    uint64_t size = end - offsets[c];
    if (current > 0 && current + size > chunk) {
      starts.push_back(offsets[c]);
      current = 0;
    }
    current += size;
  }
  if (tile.empty()) starts.clear();
  return FilterChunks(p, tile, type, value_size, starts);
}

Result<ByteVec> EncodeGenericTile(Bytes payload, uint32_t version) {
  FilterPipeline p;
  Filter gzip;
  gzip.type = FilterType::kGzip;
  gzip.compression_level = 1;
  p.filters.push_back(gzip);
  return EncodeGenericTile(payload, version, p);
}

Result<ByteVec> EncodeGenericTile(Bytes payload, uint32_t version, const FilterPipeline& p) {
  ASSIGN_OR_RETURN(ByteVec data, FilterFixedTile(p, payload, Datatype::kChar, 1));
  ByteWriter pipeline;
  SerializeFilterPipeline(p, pipeline);
  ByteWriter w;
  w.Put<uint32_t>(version);
  w.Put<uint64_t>(data.size());
  w.Put<uint64_t>(payload.size());
  w.Put<uint8_t>(static_cast<uint8_t>(Datatype::kChar));
  w.Put<uint64_t>(1);
  w.Put<uint8_t>(0);
  w.Put<uint32_t>(static_cast<uint32_t>(pipeline.size()));
  w.PutBytes(pipeline.bytes());
  w.PutBytes(data);
  return w.Take();
}

}  // namespace tiledbfs::core
