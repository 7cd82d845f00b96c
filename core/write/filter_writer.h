// Writing filter pipelines and tiles: the exact mirror of
// core/filters/filter_pipeline.h (ParseFilterPipeline, UnfilterTile) and
// core/tile/generic_tile.h (DecodeGenericTile).
// Spec: format_spec/filter_pipeline.md, format_spec/tile.md,
// format_spec/generic_tile.md, format_spec/filters/*.md.
//
// Serialized tile (tile.md):
//   uint64 number of chunks, then per chunk: uint32 original length,
//   uint32 filtered length, uint32 metadata length, metadata, filtered data.
// Chunks (as TileDB 2.30's FilterPipeline::run_forward makes them): fixed
// tiles are cut every C bytes, C = min(64 KiB, tile size) rounded down to a
// whole number of cells (at least one cell); var data tiles are cut at cell
// boundaries, a cell never split. An empty tile has zero chunks.
//
// Forward filters supported: NONE, GZIP, ZSTD, LZ4, BZIP2, RLE (fixed-size
// cells only), BYTESHUFFLE, BITSHUFFLE, POSITIVE_DELTA, CHECKSUM_MD5,
// CHECKSUM_SHA256. Anything else is kUnsupported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/filters/filter_pipeline.h"
#include "core/util/byte_writer.h"

namespace tiledbfs::core {

// TileDB's constants::max_tile_chunk_size.
constexpr uint64_t kMaxTileChunkSize = 64 * 1024;

// Appends a pipeline as ParseFilterPipeline reads it: max chunk size,
// filter count, per filter type byte, options length, options.
void SerializeFilterPipeline(const FilterPipeline& p, ByteWriter& w);

// Whether the writer can run this pipeline forward on tiles of `type` (var:
// a var-sized data tile). kUnsupported naming the filter otherwise.
Status CheckWritablePipeline(const FilterPipeline& p, Datatype type, bool var);

// Filters a fixed-size tile. `type` and `cell_size` as in TileContext.
Result<ByteVec> FilterFixedTile(const FilterPipeline& p, Bytes tile, Datatype type,
                                uint64_t cell_size);

// Filters a var data tile cut at the cell starts `offsets` (relative to the
// tile, one per cell).
Result<ByteVec> FilterVarDataTile(const FilterPipeline& p, Bytes tile, Datatype type,
                                  const std::vector<uint64_t>& offsets);

// A whole generic tile (header + filtered data) of format version `version`,
// as TileDB writes it: GZIP level 1 pipeline, datatype CHAR, cell size 1,
// no encryption.
Result<ByteVec> EncodeGenericTile(Bytes payload, uint32_t version);
// The same with `pipeline` in place of GZIP (tests use an empty one).
Result<ByteVec> EncodeGenericTile(Bytes payload, uint32_t version, const FilterPipeline& pipeline);

}  // namespace tiledbfs::core
