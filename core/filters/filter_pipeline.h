// Filter pipelines: their serialized form and running them in reverse.
// Spec: format_spec/filter_pipeline.md, format_spec/tile.md (chunks and each
// filter's chunk metadata), format_spec/filters/*.md.
//
// Serialized pipeline:
//   offset  type      field                    since
//   0       uint32    max chunk size
//   4       uint32    number of filters
//   8       Filter[]  each: uint8 type, uint32 options length, options bytes
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/format/datatype.h"
#include "core/util/byte_reader.h"
#include "core/util/limits.h"

namespace tiledbfs::core {

enum class FilterType : uint8_t {
  kNone = 0, kGzip = 1, kZstd = 2, kLz4 = 3, kRle = 4, kBzip2 = 5, kDoubleDelta = 6,
  kBitWidthReduction = 7, kBitshuffle = 8, kByteshuffle = 9, kPositiveDelta = 10,
  kEncryptionAes256Gcm = 11,  // internal: never serialized in a schema
  kChecksumMd5 = 12, kChecksumSha256 = 13, kDictionary = 14, kScaleFloat = 15, kXor = 16,
  kDeprecated = 17, kWebp = 18, kDelta = 19,
};

std::string_view FilterName(FilterType t);  // "ZSTD", "BIT_WIDTH_REDUCTION", ...

struct Filter {
  FilterType type = FilterType::kNone;
  // Options, meaningful per type (defaults as TileDB's):
  int32_t compression_level = 0;                 // GZIP, ZSTD, LZ4, BZIP2, RLE, DICT, DD, DELTA
  std::optional<Datatype> reinterpret_datatype;  // DOUBLE_DELTA, DELTA (any compressor, v>=?)
  uint32_t max_window_size = 0;                  // BIT_WIDTH_REDUCTION, POSITIVE_DELTA
  uint64_t scale_byte_width = 8;                 // SCALE_FLOAT
  double scale_factor = 1.0;                     // SCALE_FLOAT
  double scale_offset = 0.0;                     // SCALE_FLOAT
  // WEBP options are parsed and kept only to say the filter is unsupported.
  std::vector<uint8_t> raw_options;  // the serialized options, as stored
};

struct FilterPipeline {
  uint32_t max_chunk_size = 65536;
  std::vector<Filter> filters;

  bool empty() const { return filters.empty(); }
};

// Parses a serialized pipeline at the reader's position. `version` is the
// format version of the enclosing structure (schema or generic tile), for
// version-dependent option layouts. Errors: kCorrupt (truncated, bad option
// length), kUnsupported (unknown filter type byte). Reader position is
// unspecified on failure.
Result<FilterPipeline> ParseFilterPipeline(ByteReader& r, uint32_t version);

// AES-256-GCM key. Arrays written with a key have every generic tile and
// every data tile encrypted (encryption appended as the pipeline's last filter).
struct EncryptionKey {
  std::array<uint8_t, 32> bytes{};
};

// What unfiltering a tile needs beyond the pipeline.
struct TileContext {
  Datatype type = Datatype::kUInt8;  // datatype of the tile's values
  uint64_t cell_size = 1;            // bytes per cell (fixed) or value size (var data)
  uint32_t format_version = 0;       // of the fragment (or of the generic tile)
  const EncryptionKey* key = nullptr;  // when the array is encrypted
  bool encrypted = false;              // add AES-256-GCM to the pipeline (needs key)
  std::string file;                    // for messages, relative to the array
  uint64_t file_offset = 0;            // of the tile in `file`, for messages
  const Limits* limits = &DefaultLimits();
};

// Reverses `pipeline` over one serialized tile (num chunks + chunks, as in
// tile.md). The result has exactly the sum of the chunks' original lengths.
// Errors: kCorrupt (bad chunk framing, codec failure, checksum mismatch,
// sizes that do not match), kUnsupported (WEBP, unknown filter), kKey (no
// key, or authentication failure). Messages name ctx.file and the offset.
Result<ByteVec> UnfilterTile(const FilterPipeline& pipeline, Bytes filtered,
                             const TileContext& ctx);

// A var-sized tile pair after unfiltering: per-cell start offsets (relative
// to the start of `data`) and the concatenated values.
struct VarTile {
  std::vector<uint64_t> offsets;  // one per cell
  ByteVec data;
};

// Reverses an offsets tile and its var data tile together. Needed because for
// string types with RLE or DICTIONARY first in the data pipeline (format
// version >= 12?) TileDB stores the offsets inside the data tile and the
// offsets tile holds no filtered data. `var_size` is the unfiltered size of
// the var tile from fragment metadata (0 if unknown). Offsets are validated:
// non-decreasing and within data.size().
Result<VarTile> UnfilterVarTile(const FilterPipeline& offsets_pipeline, Bytes offsets_filtered,
                                const TileContext& offsets_ctx,
                                const FilterPipeline& data_pipeline, Bytes data_filtered,
                                const TileContext& data_ctx, uint64_t var_size);

}  // namespace tiledbfs::core
