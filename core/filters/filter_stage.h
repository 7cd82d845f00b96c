// Internal to core/filters: one stage of a pipeline run in reverse.
//
// TileDB's filters exchange two byte streams per chunk, "metadata" and
// "data" (tile.md, "Chunk Format"). Run in reverse, filter i reads the
// streams filter i+1 produced (or the chunk's stored metadata and data for
// the last filter), consumes its own header from the front of the metadata,
// and produces the streams filter i-1 reads. Each filter is a function with
// this one signature, selected by one switch (ReverseFilter).
//
// Every filter:
//  - reads its input through ByteReader (checked, never past the end);
//  - checks each declared output size against `capacity` BEFORE allocating,
//    and grows its output only as it really produces bytes;
//  - reports corruption as kCorrupt, a filter or parameter it cannot run as
//    kUnsupported, a missing/wrong key as kKey, with messages that start with
//    the filter's name; the pipeline adds file, tile and chunk.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/filters/filter_pipeline.h"
#include "core/util/bytes.h"
#include "core/util/result.h"

namespace tiledbfs::core::filters {

struct StageContext {
  const Filter* filter = nullptr;
  // The datatype this filter saw when writing (TileDB's filter_data_type_):
  // the tile's type transformed by the output types of the filters before it.
  Datatype type = Datatype::kUInt8;
  uint64_t cell_size = 1;         // the tile's cell size (RLE value size)
  uint32_t pipeline_version = 0;  // version the pipeline was parsed with
  uint32_t tile_version = 0;      // format version of the tile itself
  const EncryptionKey* key = nullptr;
  // Most bytes this stage may put in either output stream.
  uint64_t capacity = 0;
  // Set when the var-sized string offsets are rebuilt from the data tile
  // (FilterPipeline::skip_offsets_filtering in TileDB): RLE and DICTIONARY
  // append one offset per cell here.
  std::vector<uint64_t>* var_offsets = nullptr;
  // Set for the last stage run (the pipeline's first filter): a stage that
  // can appends its data output here, the tile being assembled, instead of
  // to StageOutput::data, and says so with data_in_sink. Saves one copy of
  // every tile.
  ByteVec* sink = nullptr;
};

struct StageOutput {
  ByteVec metadata;
  ByteVec data;
  bool data_in_sink = false;  // the data output went to StageContext::sink
};

// The output of a stage that leaves both streams as they are.
inline StageOutput PassThrough(Bytes metadata, Bytes data) {
  return {CopyBytes(metadata), CopyBytes(data)};
}

// Reverses ctx.filter over (metadata, data).
Result<StageOutput> ReverseFilter(const StageContext& ctx, Bytes metadata, Bytes data);

// The datatype a filter hands to the next one when writing (TileDB's
// Filter::output_datatype).
Datatype FilterOutputType(const Filter& f, Datatype input);

// Per-filter implementations (one file each, dispatched by ReverseFilter).
Result<StageOutput> ReverseCompression(const StageContext& ctx, Bytes metadata, Bytes data);
Result<StageOutput> ReverseByteshuffle(const StageContext& ctx, Bytes metadata, Bytes data);
Result<StageOutput> ReverseBitshuffle(const StageContext& ctx, Bytes metadata, Bytes data);
Result<StageOutput> ReverseBitWidthReduction(const StageContext& ctx, Bytes metadata, Bytes data);
Result<StageOutput> ReversePositiveDelta(const StageContext& ctx, Bytes metadata, Bytes data);
Result<StageOutput> ReverseChecksum(const StageContext& ctx, Bytes metadata, Bytes data);
Result<StageOutput> ReverseEncryption(const StageContext& ctx, Bytes metadata, Bytes data);
Result<StageOutput> ReverseScaleFloat(const StageContext& ctx, Bytes metadata, Bytes data);
Result<StageOutput> ReverseXor(const StageContext& ctx, Bytes metadata, Bytes data);

// Codecs used by ReverseCompression. Each appends exactly `declared` bytes
// to *out (growing it only as output is really produced), or fails:
// kCorrupt when the input does not decode to exactly `declared` bytes.
Status DecodeGzip(Bytes in, uint64_t declared, ByteVec* out);
Status DecodeZstd(Bytes in, uint64_t declared, ByteVec* out);
Status DecodeLz4(Bytes in, uint64_t declared, ByteVec* out);
Status DecodeBzip2(Bytes in, uint64_t declared, ByteVec* out);
// TileDB's own codecs. `value_size` is the RLE run value size (the tile's
// cell size); `type` the (reinterpreted) datatype for the delta codecs.
Status DecodeRle(Bytes in, uint64_t value_size, uint64_t declared, ByteVec* out);
Status DecodeDoubleDelta(Bytes in, Datatype type, uint64_t declared, ByteVec* out);
Status DecodeDelta(Bytes in, Datatype type, uint64_t declared, ByteVec* out);
// Var-sized strings stored as runs / dictionary ids (the offsets come from
// the data). Append the strings to *out and one start offset per cell to
// *offsets.
Status DecodeStringRle(Bytes in, uint8_t run_len_bytes, uint8_t str_len_bytes, uint64_t declared,
                       ByteVec* out, std::vector<uint64_t>* offsets, uint64_t max_cells);
Status DecodeStringDictionary(Bytes in, Bytes serialized_dict, uint8_t id_bytes,
                              uint8_t str_len_bytes, uint64_t declared, ByteVec* out,
                              std::vector<uint64_t>* offsets, uint64_t max_cells);

// Appends n bytes to *out, refusing to pass `capacity`.
Status AppendCapped(ByteVec* out, Bytes b, uint64_t capacity, std::string_view what);

}  // namespace tiledbfs::core::filters
