// Filter pipelines: their serialized form and running them in reverse.
// Spec: format_spec/filter_pipeline.md, format_spec/tile.md (chunks and each
// filter's chunk metadata), format_spec/filters/*.md.
//
// Serialized pipeline:
//   offset  type      field                    since
//   0       uint32    max chunk size
//   4       uint32    number of filters
//   8       Filter[]  each: uint8 type, uint32 options length, options bytes
//
// Options (TileDB FilterCreate::deserialize / each filter's serialize_impl):
//   NONE, BITSHUFFLE, BYTESHUFFLE, CHECKSUM_*, XOR, AES_256_GCM: none
//   GZIP, ZSTD, LZ4, RLE, BZIP2, DICTIONARY: uint8 compressor, int32 level
//   DOUBLE_DELTA: same + uint8 reinterpret datatype   (the byte since 20)
//   DELTA:        same + uint8 reinterpret datatype   (the byte since 19)
//   BIT_WIDTH_REDUCTION, POSITIVE_DELTA: uint32 max window size
//   SCALE_FLOAT: float64 scale, float64 offset, uint64 byte width
//   WEBP: float32 quality, uint8 format, uint8 lossless, uint16 y, x extents
// The compressor byte (TileDB's Compressor enum: 0 none, 1 gzip, 2 zstd,
// 3 lz4, 4 rle, 5 bzip2, 6 double delta, 7 dictionary, 8 delta) is what
// TileDB runs; a pipeline whose compressor byte disagrees with the filter
// type byte is rejected as corrupt. The options length must match exactly.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/format/datatype.h"
#include "core/util/byte_reader.h"
#include "core/util/limits.h"

namespace tiledbfs::core {

enum class FilterType : uint8_t {
  kNone = 0,
  kGzip = 1,
  kZstd = 2,
  kLz4 = 3,
  kRle = 4,
  kBzip2 = 5,
  kDoubleDelta = 6,
  kBitWidthReduction = 7,
  kBitshuffle = 8,
  kByteshuffle = 9,
  kPositiveDelta = 10,
  kEncryptionAes256Gcm = 11,  // internal: never serialized in a schema
  kChecksumMd5 = 12,
  kChecksumSha256 = 13,
  kDictionary = 14,
  kScaleFloat = 15,
  kXor = 16,
  kDeprecated = 17,
  kWebp = 18,
  kDelta = 19,
};

std::string_view FilterName(FilterType t);  // "ZSTD", "BIT_WIDTH_REDUCTION", ...

// How a filter type's options are laid out (the table above): the one
// switch from filter type to options, followed by the parser, the writer
// (core/write/filter_writer.h) and schema.json.
enum class FilterOptions {
  kNone,        // no options
  kCompressor,  // uint8 compressor, int32 level
  kDelta,       // as kCompressor, then uint8 reinterpret datatype (by version)
  kWindow,      // uint32 max window size
  kScaleFloat,  // float64 scale, float64 offset, uint64 byte width
  kRaw,         // WEBP: kept only as stored (Filter::raw_options)
};
FilterOptions FilterOptionsOf(FilterType t);
// TileDB's Compressor enum byte that a filter with kCompressor or kDelta
// options stores (1 GZIP ... 8 DELTA, see above); 0 for the other filters.
uint8_t CompressorByte(FilterType t);

struct Filter {
  FilterType type = FilterType::kNone;
  // Options, meaningful per type (defaults as TileDB's):
  int32_t compression_level = 0;  // GZIP, ZSTD, LZ4, BZIP2, RLE, DICT, DD, DELTA
  // DOUBLE_DELTA (stored since version 20), DELTA (since 19); nullopt = ANY.
  std::optional<Datatype> reinterpret_datatype;
  uint32_t max_window_size = 0;   // BIT_WIDTH_REDUCTION, POSITIVE_DELTA
  uint64_t scale_byte_width = 8;  // SCALE_FLOAT
  double scale_factor = 1.0;      // SCALE_FLOAT
  double scale_offset = 0.0;      // SCALE_FLOAT
  // WEBP options are parsed and kept only to say the filter is unsupported.
  ByteVec raw_options;  // the serialized options, as stored
};

struct FilterPipeline {
  uint32_t max_chunk_size = 65536;
  std::vector<Filter> filters;
  // The format version the pipeline was parsed with (of the schema or the
  // generic tile). TileDB binds it to the filters when deserializing: it
  // decides the var-sized string RLE/DICTIONARY layout (>= 12) and, with the
  // tile's type, whether offsets are stored (SkipsOffsetsFiltering).
  uint32_t version = 0;

  bool empty() const { return filters.empty(); }
  bool Has(FilterType t) const;
};

// Whether a var-sized attribute with this data pipeline and datatype stores
// no offsets: its offsets tile holds zero chunks and the offsets come out of
// the data tile (RLE first on STRING_ASCII since version 12 or STRING_UTF8
// since 17; DICTIONARY on STRING_ASCII since 13 or STRING_UTF8 since 17).
// TileDB: FilterPipeline::skip_offsets_filtering, with the pipeline's version.
bool SkipsOffsetsFiltering(const FilterPipeline& data_pipeline, Datatype type);

// Parses a serialized pipeline at the reader's position. `version` is the
// format version of the enclosing structure (schema or generic tile), for
// version-dependent option layouts; it is kept in FilterPipeline::version.
// Errors: kCorrupt (truncated, options length other than the filter's
// layout, compressor byte not matching the type, SCALE_FLOAT byte width not
// 1/2/4/8, unknown reinterpret datatype), kUnsupported (filter type byte
// > 19). WEBP and type 17 parse (so the rest of a schema stays readable) and
// make UnfilterTile answer kUnsupported. Reader position is unspecified on
// failure.
Result<FilterPipeline> ParseFilterPipeline(ByteReader& r, uint32_t version);

// AES-256-GCM key. Arrays written with a key have every generic tile and
// every data tile encrypted: data tiles run an implicit AES-256-GCM filter
// after the schema's pipeline (TileContext::encrypted), generic tiles list it
// in their own pipeline. Each part of each chunk has its own IV and tag, kept
// in the chunk metadata (core/filters/encryption.cc).
struct EncryptionKey {
  std::array<uint8_t, 32> bytes{};
};

// What unfiltering a tile needs beyond the pipeline.
//  - type: the attribute's or dimension's datatype (also for a dimension
//    that inherits the schema's coords filters); kUInt64 for offsets tiles,
//    kUInt8 for validity tiles; the generic tile header's datatype. Filters
//    after the first see it as the previous filters transformed it.
//  - cell_size: bytes per cell (cell_val_num * type size) for fixed tiles,
//    the type's size for var data tiles, 8 for offsets, 1 for validity. RLE
//    runs are cells of this size.
//  - format_version: of the fragment (or of the generic tile); decides
//    whether BIT_WIDTH_REDUCTION/POSITIVE_DELTA touch datetime/time values.
struct TileContext {
  // `limits` must outlive the context: every reader passes its own (an
  // array's, Array::limits()), so that none is unfiltered past it.
  explicit TileContext(const Limits& l) : limits(&l) {}
  Datatype type = Datatype::kUInt8;    // datatype of the tile's values
  uint64_t cell_size = 1;              // bytes per cell (fixed) or value size (var data)
  uint32_t format_version = 0;         // of the fragment (or of the generic tile)
  const EncryptionKey* key = nullptr;  // when the array is encrypted
  bool encrypted = false;              // add AES-256-GCM to the pipeline (needs key)
  std::string file;                    // for messages, relative to the array
  uint64_t file_offset = 0;            // of the tile in `file`, for messages
  const Limits* limits;                // max_tile_bytes: the most a tile may unfilter to
  // The unfiltered size when known (fragment metadata, generic tile header):
  // checked against the chunks' original lengths before anything is decoded.
  std::optional<uint64_t> expected_size;
  // Threads that may unfilter the chunks of one big tile side by side: for a
  // tile a reader waits for alone. Work that decodes many tiles at once
  // spreads the tiles over the cores instead and leaves this at 1.
  unsigned threads = 1;
};

// The number of bytes the serialized tile at the start of `bytes` occupies
// (num chunks + every chunk's framing and bytes), without decoding it. Lets a
// caller walk tiles stored back to back. kCorrupt if the framing is cut.
Result<uint64_t> FilteredTileSize(Bytes bytes, uint64_t file_offset = 0);

// Reverses `pipeline` over one serialized tile (num chunks + chunks, as in
// tile.md). `filtered` must hold exactly the tile (trailing bytes are
// corrupt). The result has exactly the sum of the chunks' original lengths,
// which must not exceed ctx.limits->max_tile_bytes (kOutOfMemory) and must
// equal ctx.expected_size when given. Memory grows with the bytes really
// decoded, never with a declared length alone. With ctx.encrypted the
// AES-256-GCM filter is run first (it is the pipeline's implicit last
// filter); a pipeline that itself lists AES-256-GCM (generic tiles) needs
// ctx.key as well.
// Errors: kCorrupt (bad chunk framing, codec failure, checksum mismatch,
// sizes that do not match), kUnsupported (WEBP, unknown filter), kKey (no
// key, or authentication failure). Messages name ctx.file and the offset.
Result<ByteVec> UnfilterTile(const FilterPipeline& pipeline, Bytes filtered,
                             const TileContext& ctx);

// How many tiles this process has unfiltered with their chunks spread over
// threads (TileContext::threads): a tile of at least 256 KiB, of chunks of at
// most 1 MiB, unfiltered whole, not var-sized strings rebuilding offsets.
// For tests and tools.
uint64_t TilesUnfilteredInParallel();

// Like UnfilterTile, but unfilters only the chunks that hold bytes [from, to)
// of the unfiltered tile (chunks are filtered independently: tile.md), for a
// read that needs a few cells of a big tile. Every chunk's framing is still
// checked, and the chunks' original lengths against ctx.expected_size. The
// result is the bytes of those chunks, back to back; *start gets the offset
// of the first of them in the unfiltered tile. Nothing when from >= to or
// the range lies beyond the tile. Same errors as UnfilterTile.
Result<ByteVec> UnfilterTileRange(const FilterPipeline& pipeline, Bytes filtered,
                                  const TileContext& ctx, uint64_t from, uint64_t to,
                                  uint64_t* start);

// Where one chunk of a serialized tile lies: its record (12-byte header,
// metadata, filtered data) relative to the tile's first byte, and its bytes
// in the unfiltered tile.
struct ChunkSpan {
  uint64_t stored_offset = 0;
  uint64_t stored_size = 0;
  uint64_t unfiltered_offset = 0;
  uint32_t unfiltered_size = 0;
};

// The chunks of the serialized tile `filtered` (exactly one tile), from its
// framing alone: what lets a later read fetch and unfilter a few chunks
// without the rest (UnfilterChunkRecords). kCorrupt if the framing is cut
// or bytes follow it; messages give offsets from `file_offset`.
Result<std::vector<ChunkSpan>> MapChunks(Bytes filtered, uint64_t file_offset = 0);

// Unfilters the chunk records `records` (the stored bytes of consecutive
// chunks, `spans` of a MapChunks, back to back) and returns their bytes.
// ctx.file_offset is the file offset of the first record. Each chunk's
// original length must match its span (else the file changed: kCorrupt).
// Same errors as UnfilterTile.
Result<ByteVec> UnfilterChunkRecords(const FilterPipeline& pipeline, Bytes records,
                                     std::span<const ChunkSpan> spans, const TileContext& ctx);

// A var-sized tile pair after unfiltering: per-cell start offsets (relative
// to the start of `data`) and the concatenated values.
//
// Offsets in an offsets tile are byte offsets relative to the start of the
// tile's own var data tile, for every format version TileDB 2.30 reads
// (its reader applies them unchanged to the unfiltered var tile and appends
// the var tile's size as the extra final offset: Tile::add_extra_offset).
// The offsets tile holds one uint64 per cell, without that final element.
struct VarTile {
  std::vector<uint64_t> offsets;  // one per cell
  ByteVec data;
};

// Reverses an offsets tile and its var data tile together. Needed because
// when SkipsOffsetsFiltering(data_pipeline, data_ctx.type), TileDB stores the
// offsets inside the data tile and the offsets tile holds zero chunks (it is
// then ignored). `var_size` is the unfiltered size of the var tile from
// fragment metadata (0 if unknown). Offsets are validated: non-decreasing
// and within data.size().
Result<VarTile> UnfilterVarTile(const FilterPipeline& offsets_pipeline, Bytes offsets_filtered,
                                const TileContext& offsets_ctx, const FilterPipeline& data_pipeline,
                                Bytes data_filtered, const TileContext& data_ctx,
                                uint64_t var_size);

}  // namespace tiledbfs::core
