#include "core/filters/filter_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <optional>

#include "core/filters/filter_stage.h"
#include "core/util/parallel.h"

namespace tiledbfs::core {

namespace {

constexpr uint8_t kMaxFilterTypeByte = 19;

// Version predicates for filter options (filter_pipeline.md, "Delta
// Compressor Options").
bool HasDoubleDeltaReinterpretType(uint32_t version) { return version >= 20; }
bool HasDeltaReinterpretType(uint32_t version) { return version >= 19; }

Status ParseOptions(Filter& f, Bytes options, uint64_t options_offset, uint32_t version) {
  ByteReader r(options, options_offset);
  const std::string name(FilterName(f.type));
  auto field = [&](std::string_view what) { return name + " options: " + std::string(what); };
  switch (FilterOptionsOf(f.type)) {
    case FilterOptions::kNone:
      break;
    case FilterOptions::kCompressor:
    case FilterOptions::kDelta: {
      ASSIGN_OR_RETURN(uint8_t compressor, r.Read<uint8_t>(field("compressor")));
      if (compressor != CompressorByte(f.type)) {
        return Error::Corrupt(fmt::format("offset {}: {}: compressor byte {} does not match",
                                          options_offset, field("compressor"), compressor));
      }
      ASSIGN_OR_RETURN(f.compression_level, r.Read<int32_t>(field("compression level")));
      bool has_reinterpret =
          (f.type == FilterType::kDoubleDelta && HasDoubleDeltaReinterpretType(version)) ||
          (f.type == FilterType::kDelta && HasDeltaReinterpretType(version));
      if (has_reinterpret) {
        ASSIGN_OR_RETURN(uint8_t t, r.Read<uint8_t>(field("reinterpret datatype")));
        if (t != static_cast<uint8_t>(Datatype::kAny)) {
          auto dt = ParseDatatype(t);
          if (!dt.ok()) {
            return Error::Corrupt(fmt::format("offset {}: {}: unknown datatype {}",
                                              options_offset + 5, field("reinterpret datatype"),
                                              t));
          }
          f.reinterpret_datatype = *dt;
        }
      }
      break;
    }
    case FilterOptions::kWindow: {
      ASSIGN_OR_RETURN(f.max_window_size, r.Read<uint32_t>(field("max window size")));
      break;
    }
    case FilterOptions::kScaleFloat: {
      ASSIGN_OR_RETURN(f.scale_factor, r.Read<double>(field("scale")));
      ASSIGN_OR_RETURN(f.scale_offset, r.Read<double>(field("offset")));
      ASSIGN_OR_RETURN(f.scale_byte_width, r.Read<uint64_t>(field("byte width")));
      uint64_t w = f.scale_byte_width;
      if (w != 1 && w != 2 && w != 4 && w != 8) {
        return Error::Corrupt(fmt::format("offset {}: {}: {} is not 1, 2, 4 or 8",
                                          options_offset + 16, field("byte width"), w));
      }
      break;
    }
    case FilterOptions::kRaw:
      // Kept only to report the filter as unsupported when a tile needs it.
      return Ok();
  }
  if (!r.empty()) {
    return Error::Corrupt(fmt::format("offset {}: {}: options length {} but {} bytes used",
                                      options_offset, name, options.size(), r.position()));
  }
  return Ok();
}

std::string Where(const TileContext& ctx) {
  return fmt::format("{}: tile at offset {}", ctx.file.empty() ? "<tile>" : ctx.file,
                     ctx.file_offset);
}

struct Chunk {
  uint32_t original_size;
  Bytes metadata;
  Bytes data;
  uint64_t offset;  // file offset of the chunk header
};

// Parses `num_chunks` chunks (header, metadata, data) stored back to back.
Result<std::vector<Chunk>> ParseChunkRecords(ByteReader& r, uint64_t num_chunks) {
  // Every chunk has a 12-byte header: bound the count by the bytes present
  // before reserving anything.
  if (num_chunks > r.remaining() / 12) {
    return r.Corrupt("tile: number of chunks",
                     fmt::format("{} chunks cannot fit in {} bytes", num_chunks, r.remaining()));
  }
  std::vector<Chunk> chunks;
  chunks.reserve(num_chunks);
  for (uint64_t i = 0; i < num_chunks; ++i) {
    Chunk c;
    c.offset = r.offset();
    ASSIGN_OR_RETURN(c.original_size, r.Read<uint32_t>("chunk: original length"));
    ASSIGN_OR_RETURN(uint32_t filtered, r.Read<uint32_t>("chunk: filtered length"));
    ASSIGN_OR_RETURN(uint32_t metadata, r.Read<uint32_t>("chunk: metadata length"));
    ASSIGN_OR_RETURN(c.metadata, r.ReadBytes(metadata, "chunk: metadata"));
    ASSIGN_OR_RETURN(c.data, r.ReadBytes(filtered, "chunk: filtered data"));
    chunks.push_back(c);
  }
  return chunks;
}

// Parses the chunk framing of one tile (tile.md). Consumes exactly the tile.
Result<std::vector<Chunk>> ParseChunks(ByteReader& r) {
  ASSIGN_OR_RETURN(uint64_t num_chunks, r.Read<uint64_t>("tile: number of chunks"));
  return ParseChunkRecords(r, num_chunks);
}

struct Stage {
  const Filter* filter;
  Datatype type;
};

const Filter kAesFilter = [] {
  Filter f;
  f.type = FilterType::kEncryptionAes256Gcm;
  return f;
}();

Result<std::vector<Stage>> BuildStages(const FilterPipeline& p, const TileContext& ctx) {
  std::vector<Stage> stages;
  Datatype t = ctx.type;
  auto add = [&](const Filter* f) {
    stages.push_back({f, t});
    t = filters::FilterOutputType(*f, t);
  };
  for (const Filter& f : p.filters) add(&f);
  if (ctx.encrypted) add(&kAesFilter);
  for (const Stage& s : stages) {
    if (s.filter->type == FilterType::kEncryptionAes256Gcm && ctx.key == nullptr) {
      return Error::Key(Where(ctx) + ": the tile is encrypted (AES-256-GCM) and no key was given");
    }
    if (s.filter->type == FilterType::kWebp) {
      return Error::Unsupported(Where(ctx) + ": unsupported filter WEBP");
    }
    if (s.filter->type == FilterType::kDeprecated) {
      return Error::Unsupported(Where(ctx) + ": unsupported filter type 17");
    }
  }
  return stages;
}

// Runs the stages in reverse over one chunk; appends its bytes to *out.
Status UnfilterChunk(const std::vector<Stage>& stages, const FilterPipeline& p, const Chunk& c,
                     const TileContext& ctx, std::vector<uint64_t>* var_offsets, ByteVec* out) {
  if (stages.empty()) {
    if (c.data.size() != c.original_size || !c.metadata.empty()) {
      return Error::Corrupt(fmt::format(
          "chunk at offset {}: no filters, but {} filtered and {} metadata bytes for an original "
          "length of {}",
          c.offset, c.data.size(), c.metadata.size(), c.original_size));
    }
    AppendBytes(*out, c.data);
    return Ok();
  }
  filters::StageOutput cur;
  Bytes md = c.metadata;
  Bytes data = c.data;
  const uint64_t before = out->size();
  for (size_t i = stages.size(); i-- > 0;) {
    filters::StageContext sc;
    sc.filter = stages[i].filter;
    sc.type = stages[i].type;
    sc.cell_size = ctx.cell_size;
    sc.pipeline_version = p.version;
    sc.tile_version = ctx.format_version;
    sc.key = ctx.key;
    sc.capacity = i == 0 ? c.original_size : ctx.limits->max_tile_bytes;
    sc.var_offsets = var_offsets;
    if (i == 0 && var_offsets == nullptr) sc.sink = out;
    auto r = filters::ReverseFilter(sc, md, data);
    if (!r.ok()) {
      return r.error().WithContext(fmt::format("chunk at offset {}", c.offset));
    }
    cur = std::move(r).value();
    md = cur.metadata;
    data = cur.data;
  }
  if (cur.data_in_sink) {
    if (out->size() - before != c.original_size) {
      return Error::Corrupt(fmt::format("chunk at offset {}: unfiltered to {} bytes, expected {}",
                                        c.offset, out->size() - before, c.original_size));
    }
    return Ok();
  }
  if (data.size() != c.original_size) {
    return Error::Corrupt(fmt::format("chunk at offset {}: unfiltered to {} bytes, expected {}",
                                      c.offset, data.size(), c.original_size));
  }
  // A tile of one chunk takes the chunk's buffer; otherwise the chunk is
  // appended to the room reserved for the whole tile.
  if (out->empty() && out->capacity() <= cur.data.size()) {
    *out = std::move(cur.data);
  } else {
    AppendBytes(*out, data);
  }
  return Ok();
}

// A tile is unfiltered on several threads (TileContext::threads) from this
// size: a thread is started per tile, and a small tile has little to share.
constexpr uint64_t kParallelTileBytes = uint64_t{256} << 10;
// Nor when a chunk is bigger than this: each thread keeps a chunk's buffer.
constexpr uint64_t kParallelChunkBytes = uint64_t{1} << 20;
std::atomic<uint64_t> g_parallel_tiles{0};

// Unfilters every chunk of a tile of `total` bytes on up to ctx.threads
// threads, each chunk into its thread's buffer (in cache), then into its
// place in the tile. Fails as the serial loop would: with the error of the
// first chunk, in order, that fails.
Result<ByteVec> UnfilterChunksInParallel(const std::vector<Stage>& stages,
                                         const FilterPipeline& pipeline,
                                         const std::vector<Chunk>& chunks, const TileContext& ctx,
                                         uint64_t total) {
  g_parallel_tiles.fetch_add(1, std::memory_order_relaxed);
  std::vector<uint64_t> at(chunks.size());
  for (size_t i = 1; i < chunks.size(); ++i) at[i] = at[i - 1] + chunks[i - 1].original_size;
  ByteVec out(total);
  std::vector<std::optional<Error>> failed(chunks.size());
  ParallelFor(
      chunks.size(),
      [&](size_t i) {
        thread_local ByteVec chunk;
        chunk.clear();
        try {
          Status s = UnfilterChunk(stages, pipeline, chunks[i], ctx, nullptr, &chunk);
          if (!s.ok()) {
            failed[i] = s.error();
            return;
          }
          // UnfilterChunk checked that the chunk has its original length.
          std::memcpy(out.data() + at[i], chunk.data(), chunk.size());
        } catch (const std::bad_alloc&) {
          failed[i] = Error::OutOfMemory(fmt::format("chunk at offset {}", chunks[i].offset));
        }
      },
      ctx.threads);
  for (const std::optional<Error>& e : failed) {
    if (e) return e->WithContext(Where(ctx));
  }
  return out;
}

// A decoded tile's memory is what the tile cache counts it for (its
// capacity): where the output outgrew its plausible reservation (a tile
// compressed more than 64 times) or kept room a range did not use, the
// slack goes back, at the cost of one copy.
void FitCapacity(ByteVec& out) {
  if (out.capacity() - out.size() > out.size() / 16 + 4096) out.shrink_to_fit();
}

// Unfilters the chunks of the tile that hold bytes [from, to) of its
// unfiltered bytes (all of them by default); *start (when given) gets the
// offset in the tile of the first one unfiltered.
Result<ByteVec> UnfilterTileImpl(const FilterPipeline& pipeline, Bytes filtered,
                                 const TileContext& ctx, std::vector<uint64_t>* var_offsets,
                                 uint64_t from = 0, uint64_t to = UINT64_MAX,
                                 uint64_t* start = nullptr) {
  ByteReader r(filtered, ctx.file_offset);
  auto chunks_r = ParseChunks(r);
  if (!chunks_r.ok()) return chunks_r.error().WithContext(Where(ctx));
  std::vector<Chunk> chunks = std::move(chunks_r).value();
  if (!r.empty()) {
    return Error::Corrupt(
        fmt::format("{}: {} bytes after the last chunk", Where(ctx), r.remaining()));
  }
  uint64_t total = 0;
  for (const Chunk& c : chunks) {
    if (AddOverflow(total, c.original_size, &total)) {
      return Error::Corrupt(Where(ctx) + ": chunk lengths overflow");
    }
  }
  if (ctx.expected_size && total != *ctx.expected_size) {
    return Error::Corrupt(fmt::format("{}: chunks add up to {} bytes, expected {}", Where(ctx),
                                      total, *ctx.expected_size));
  }
  if (total > ctx.limits->max_tile_bytes) {
    return Error::OutOfMemory(fmt::format("{}: unfiltered size {} exceeds the limit of {} bytes",
                                          Where(ctx), total, ctx.limits->max_tile_bytes));
  }
  ASSIGN_OR_RETURN(std::vector<Stage> stages, BuildStages(pipeline, ctx));

  ByteVec out;
  // Reserve only what the stored bytes make plausible; beyond that the
  // output grows as chunks really decode.
  uint64_t plausible = std::min<uint64_t>(total, uint64_t{filtered.size()} * 64 + 4096);
  const bool ranged = from > 0 || to < total;
  if (ctx.threads > 1 && chunks.size() > 1 && !ranged && var_offsets == nullptr &&
      total >= kParallelTileBytes && plausible == total &&
      std::all_of(chunks.begin(), chunks.end(),
                  [](const Chunk& c) { return c.original_size <= kParallelChunkBytes; })) {
    if (start != nullptr) *start = 0;
    return UnfilterChunksInParallel(stages, pipeline, chunks, ctx, total);
  }
  if (ranged) {  // its bytes and the chunks it cuts
    const uint64_t end = std::min(to, total);
    plausible = end > from ? std::min<uint64_t>(plausible, end - from + 2 * 65536) : 0;
  }
  out.reserve(plausible);
  uint64_t chunk_start = 0;  // of the chunk in the unfiltered tile
  bool first_taken = false;
  for (const Chunk& c : chunks) {
    const uint64_t chunk_end = chunk_start + c.original_size;  // <= total: no overflow
    const bool skip = ranged && (chunk_end <= from || chunk_start >= to);
    chunk_start = chunk_end;
    if (skip) continue;
    if (!first_taken && start != nullptr) *start = chunk_end - c.original_size;
    first_taken = true;
    uint64_t before = out.size();
    size_t offsets_before = var_offsets ? var_offsets->size() : 0;
    Status s = UnfilterChunk(stages, pipeline, c, ctx, var_offsets, &out);
    if (!s.ok()) return s.error().WithContext(Where(ctx));
    // Offsets rebuilt from a chunk are relative to that chunk.
    if (var_offsets != nullptr && before != 0) {
      for (size_t i = offsets_before; i < var_offsets->size(); ++i) (*var_offsets)[i] += before;
    }
  }
  FitCapacity(out);
  return out;
}

}  // namespace

std::string_view FilterName(FilterType t) {
  switch (t) {
    case FilterType::kNone:
      return "NONE";
    case FilterType::kGzip:
      return "GZIP";
    case FilterType::kZstd:
      return "ZSTD";
    case FilterType::kLz4:
      return "LZ4";
    case FilterType::kRle:
      return "RLE";
    case FilterType::kBzip2:
      return "BZIP2";
    case FilterType::kDoubleDelta:
      return "DOUBLE_DELTA";
    case FilterType::kBitWidthReduction:
      return "BIT_WIDTH_REDUCTION";
    case FilterType::kBitshuffle:
      return "BITSHUFFLE";
    case FilterType::kByteshuffle:
      return "BYTESHUFFLE";
    case FilterType::kPositiveDelta:
      return "POSITIVE_DELTA";
    case FilterType::kEncryptionAes256Gcm:
      return "AES_256_GCM";
    case FilterType::kChecksumMd5:
      return "CHECKSUM_MD5";
    case FilterType::kChecksumSha256:
      return "CHECKSUM_SHA256";
    case FilterType::kDictionary:
      return "DICTIONARY";
    case FilterType::kScaleFloat:
      return "SCALE_FLOAT";
    case FilterType::kXor:
      return "XOR";
    case FilterType::kDeprecated:
      return "DEPRECATED";
    case FilterType::kWebp:
      return "WEBP";
    case FilterType::kDelta:
      return "DELTA";
  }
  return "UNKNOWN";
}

FilterOptions FilterOptionsOf(FilterType t) {
  switch (t) {
    case FilterType::kNone:
    case FilterType::kBitshuffle:
    case FilterType::kByteshuffle:
    case FilterType::kChecksumMd5:
    case FilterType::kChecksumSha256:
    case FilterType::kXor:
    case FilterType::kEncryptionAes256Gcm:
    case FilterType::kDeprecated:
      return FilterOptions::kNone;
    case FilterType::kGzip:
    case FilterType::kZstd:
    case FilterType::kLz4:
    case FilterType::kRle:
    case FilterType::kBzip2:
    case FilterType::kDictionary:
      return FilterOptions::kCompressor;
    case FilterType::kDoubleDelta:
    case FilterType::kDelta:
      return FilterOptions::kDelta;
    case FilterType::kBitWidthReduction:
    case FilterType::kPositiveDelta:
      return FilterOptions::kWindow;
    case FilterType::kScaleFloat:
      return FilterOptions::kScaleFloat;
    case FilterType::kWebp:
      return FilterOptions::kRaw;
  }
  return FilterOptions::kNone;
}

uint8_t CompressorByte(FilterType t) {
  switch (t) {
    case FilterType::kGzip:
      return 1;
    case FilterType::kZstd:
      return 2;
    case FilterType::kLz4:
      return 3;
    case FilterType::kRle:
      return 4;
    case FilterType::kBzip2:
      return 5;
    case FilterType::kDoubleDelta:
      return 6;
    case FilterType::kDictionary:
      return 7;
    case FilterType::kDelta:
      return 8;
    default:
      return 0;
  }
}

bool FilterPipeline::Has(FilterType t) const {
  return std::any_of(filters.begin(), filters.end(), [t](const Filter& f) { return f.type == t; });
}

bool SkipsOffsetsFiltering(const FilterPipeline& p, Datatype type) {
  const uint32_t v = p.version;
  const bool ascii = type == Datatype::kStringAscii;
  const bool utf8 = type == Datatype::kStringUtf8;
  if (((v >= 12 && ascii) || (v >= 17 && utf8)) && p.Has(FilterType::kRle)) return true;
  if (((v >= 13 && ascii) || (v >= 17 && utf8)) && p.Has(FilterType::kDictionary)) return true;
  return false;
}

Result<FilterPipeline> ParseFilterPipeline(ByteReader& r, uint32_t version) {
  FilterPipeline p;
  p.version = version;
  ASSIGN_OR_RETURN(p.max_chunk_size, r.Read<uint32_t>("filter pipeline: max chunk size"));
  ASSIGN_OR_RETURN(uint32_t n, r.Read<uint32_t>("filter pipeline: number of filters"));
  // Every filter takes at least 5 bytes.
  if (n > r.remaining() / 5) {
    return r.Corrupt("filter pipeline: number of filters",
                     fmt::format("{} filters cannot fit in {} bytes", n, r.remaining()));
  }
  p.filters.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t at = r.offset();
    ASSIGN_OR_RETURN(uint8_t type, r.Read<uint8_t>("filter: type"));
    if (type > kMaxFilterTypeByte) {
      return Error::Unsupported(fmt::format("offset {}: filter: unknown filter type {}", at, type));
    }
    ASSIGN_OR_RETURN(uint32_t len, r.Read<uint32_t>("filter: options length"));
    const uint64_t options_offset = r.offset();
    ASSIGN_OR_RETURN(Bytes options, r.ReadBytes(len, "filter: options"));
    Filter f;
    f.type = static_cast<FilterType>(type);
    f.raw_options.assign(options.begin(), options.end());
    TRY(ParseOptions(f, options, options_offset, version));
    p.filters.push_back(std::move(f));
  }
  return p;
}

Result<uint64_t> FilteredTileSize(Bytes bytes, uint64_t file_offset) {
  ByteReader r(bytes, file_offset);
  ASSIGN_OR_RETURN(std::vector<Chunk> chunks, ParseChunks(r));
  return r.position();
}

Result<std::vector<ChunkSpan>> MapChunks(Bytes filtered, uint64_t file_offset) {
  ByteReader r(filtered, file_offset);
  ASSIGN_OR_RETURN(std::vector<Chunk> chunks, ParseChunks(r));
  if (!r.empty()) {
    return Error::Corrupt(fmt::format("offset {}: {} bytes after the last chunk of the tile",
                                      file_offset, r.remaining()));
  }
  std::vector<ChunkSpan> spans;
  spans.reserve(chunks.size());
  uint64_t unfiltered = 0;
  for (const Chunk& c : chunks) {
    ChunkSpan s;
    s.stored_offset = c.offset - file_offset;
    s.stored_size = 12 + c.metadata.size() + c.data.size();
    s.unfiltered_offset = unfiltered;
    s.unfiltered_size = c.original_size;
    if (AddOverflow(unfiltered, uint64_t{c.original_size}, &unfiltered)) {
      return Error::Corrupt(fmt::format("offset {}: chunk lengths overflow", file_offset));
    }
    spans.push_back(s);
  }
  return spans;
}

Result<ByteVec> UnfilterChunkRecords(const FilterPipeline& pipeline, Bytes records,
                                     std::span<const ChunkSpan> spans, const TileContext& ctx) {
  ByteReader r(records, ctx.file_offset);
  auto chunks_r = ParseChunkRecords(r, spans.size());
  if (!chunks_r.ok()) return chunks_r.error().WithContext(Where(ctx));
  const std::vector<Chunk> chunks = std::move(chunks_r).value();
  if (!r.empty()) {
    return Error::Corrupt(
        fmt::format("{}: {} bytes after the last chunk", Where(ctx), r.remaining()));
  }
  uint64_t total = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].original_size != spans[i].unfiltered_size) {
      return Error::Corrupt(fmt::format("{}: chunk at offset {} holds {} bytes, expected {}",
                                        Where(ctx), chunks[i].offset, chunks[i].original_size,
                                        spans[i].unfiltered_size));
    }
    total += chunks[i].original_size;
  }
  if (total > ctx.limits->max_tile_bytes) {
    return Error::OutOfMemory(fmt::format("{}: unfiltered size {} exceeds the limit of {} bytes",
                                          Where(ctx), total, ctx.limits->max_tile_bytes));
  }
  ASSIGN_OR_RETURN(std::vector<Stage> stages, BuildStages(pipeline, ctx));
  ByteVec out;
  // As UnfilterTile: reserve only what the stored bytes make plausible.
  out.reserve(std::min<uint64_t>(total, uint64_t{records.size()} * 64 + 4096));
  for (const Chunk& c : chunks) {
    Status s = UnfilterChunk(stages, pipeline, c, ctx, nullptr, &out);
    if (!s.ok()) return s.error().WithContext(Where(ctx));
  }
  FitCapacity(out);
  return out;
}

Result<ByteVec> UnfilterTile(const FilterPipeline& pipeline, Bytes filtered,
                             const TileContext& ctx) {
  return UnfilterTileImpl(pipeline, filtered, ctx, nullptr);
}

uint64_t TilesUnfilteredInParallel() { return g_parallel_tiles.load(std::memory_order_relaxed); }

Result<ByteVec> UnfilterTileRange(const FilterPipeline& pipeline, Bytes filtered,
                                  const TileContext& ctx, uint64_t from, uint64_t to,
                                  uint64_t* start) {
  *start = 0;
  if (from >= to) return ByteVec{};
  return UnfilterTileImpl(pipeline, filtered, ctx, nullptr, from, to, start);
}

Result<VarTile> UnfilterVarTile(const FilterPipeline& offsets_pipeline, Bytes offsets_filtered,
                                const TileContext& offsets_ctx, const FilterPipeline& data_pipeline,
                                Bytes data_filtered, const TileContext& data_ctx,
                                uint64_t var_size) {
  VarTile out;
  if (SkipsOffsetsFiltering(data_pipeline, data_ctx.type)) {
    // The offsets tile holds no chunks (TileDB writes only "0 chunks");
    // offsets come out of the data tile's RLE or DICTIONARY stage.
    ASSIGN_OR_RETURN(out.data,
                     UnfilterTileImpl(data_pipeline, data_filtered, data_ctx, &out.offsets));
  } else {
    ASSIGN_OR_RETURN(ByteVec raw, UnfilterTile(offsets_pipeline, offsets_filtered, offsets_ctx));
    if (raw.size() % 8 != 0) {
      return Error::Corrupt(fmt::format("{}: offsets tile of {} bytes is not a multiple of 8",
                                        Where(offsets_ctx), raw.size()));
    }
    // Room for the end offset a decoded tile appends (DecodeTile), so that
    // the append does not double the offsets' memory.
    out.offsets.reserve(raw.size() / 8 + 1);
    out.offsets.resize(raw.size() / 8);
    if (!raw.empty()) std::memcpy(out.offsets.data(), raw.data(), raw.size());
    ASSIGN_OR_RETURN(out.data, UnfilterTile(data_pipeline, data_filtered, data_ctx));
  }
  if (var_size != 0 && out.data.size() != var_size) {
    return Error::Corrupt(fmt::format("{}: var tile unfiltered to {} bytes, expected {}",
                                      Where(data_ctx), out.data.size(), var_size));
  }
  uint64_t prev = 0;
  for (size_t i = 0; i < out.offsets.size(); ++i) {
    uint64_t o = out.offsets[i];
    if (o < prev || o > out.data.size()) {
      return Error::Corrupt(fmt::format(
          "{}: offset {} of cell {} is {} the var data ({} bytes)", Where(offsets_ctx), o, i,
          o < prev ? "before the previous offset in" : "past the end of", out.data.size()));
    }
    prev = o;
  }
  return out;
}

}  // namespace tiledbfs::core
