// Reading one data tile of one field of one fragment: the ranged reads
// through Storage and the filter pipelines run in reverse. Nothing else of a
// fragment is touched (docs/style.md: a read of one attribute reads only its tiles).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/fragment/fragment_metadata.h"

namespace tiledbfs::core {

// One decoded tile of a field.
struct DecodedTile {
  uint64_t cell_num = 0;
  uint64_t cell_size = 0;         // fixed fields: bytes per cell
  ByteVec fixed;                  // fixed fields: cell_num * cell_size bytes
  std::vector<uint64_t> offsets;  // var fields: cell_num + 1 offsets into var
  ByteVec var;                    // var fields: values
  ByteVec validity;               // nullable fields: cell_num bytes

  Bytes cell(uint64_t i) const {
    if (!offsets.empty()) return Bytes(var.data() + offsets[i], offsets[i + 1] - offsets[i]);
    return Bytes(fixed.data() + i * cell_size, cell_size);
  }
  bool valid(uint64_t i) const { return validity.empty() || validity[i] != 0; }
};

// What a stored field is: its type and shape in the fragment's own schema.
struct FieldShape {
  Datatype type = Datatype::kUInt8;
  uint32_t cell_val_num = 1;
  bool nullable = false;
  const FilterPipeline* filters = nullptr;  // data pipeline
  bool var() const { return cell_val_num == kVarNum; }
  uint64_t cell_size() const { return var() ? 8 : DatatypeSize(type) * cell_val_num; }
};

// The shape of a field in a fragment's schema (dimension filters fall back
// to the schema's coords filters; timestamps are uint64 with coords filters).
FieldShape ShapeOf(const FragmentMetadata& fragment, FieldRef field);

// Reads and unfilters tile `tile` of `field`. Errors name the data file and
// offset: kCorrupt (sizes, codec, checksum), kUnsupported, kKey, kIo; and
// kCancelled, without reading, once the process is stopping
// (core/util/stop.h), as every function here that reads tiles.
// `threads`: how many may unfilter a big fixed-size tile's chunks
// (TileContext::threads), for a tile a reader waits for alone.
Result<DecodedTile> ReadTile(const FragmentMetadata& fragment, FieldRef field, uint64_t tile,
                             bool encrypted, unsigned threads = 1);

// What this process has unfiltered since it started: whole tiles, parts of
// tiles (ReadTilePart), and the stored bytes they came from; and, by
// field name (a dimension's or attribute's; __timestamps,
// __delete_timestamps, __coords for the others), the tiles and parts.
// For benchmarks and tools (tiledbfs-view --stats, tiledbfs -o stats): a
// slice or diff must decode only the tiles it needs, a reader of one
// column only that field's.
struct DecodeStats {
  uint64_t tiles = 0;
  uint64_t parts = 0;
  uint64_t stored_bytes = 0;
  std::map<std::string, uint64_t> by_field;
};
DecodeStats TileDecodeStats();
// `stats` in one line: "N tiles and P parts from B stored bytes (v 20,
// r 20)".
std::string DescribeDecodes(const DecodeStats& stats);

// One tile of ReadTiles.
struct TileRequest {
  const FragmentMetadata* fragment = nullptr;
  FieldRef field;
  uint64_t tile = 0;
};

// ReadTile of many tiles: their small stored ranges (a fragment of a few
// cells: a whole tile file) read together first (Storage::ReadMany: a few
// system calls for many files), then every tile unfiltered, on every core.
// Where the storage prefers parallel reads (S3: PreferredParallelism > 1),
// the tiles are read in order instead, in units of consecutive tiles of at
// least 512 KiB stored (a bigger tile alone), each unit through one
// ReadMany (its small ranges coalesced) then decoded by the thread that
// read it, on up to PreferredParallelism + 2 threads (`threads` is then
// not used): a thread takes the next unit as soon as it is done with its
// own, so that GETs stay under way while tiles are decoded. The stored
// bytes read, being read or waiting to be decoded stay within 16 MiB per
// call (a unit beyond that alone).
// Result i is what ReadTile gives for tiles[i], bytes or error. `threads`:
// as ParallelFor's (0: one per core).
std::vector<Result<DecodedTile>> ReadTiles(std::span<const TileRequest> tiles, bool encrypted,
                                           unsigned threads = 0);

// ReadTiles, handing result i to `each(i, result)` as soon as it is ready
// instead of at the end: once per tile, from any of the threads reading,
// several at once for different tiles.
using TileSink = std::function<void(size_t, Result<DecodedTile>)>;
// With `ahead` (TileCache's decode-ahead workers, reading before a reader
// going forward), a remote batch is cut into units of up to 8 MiB stored
// instead, as even as the batch allows, each read by as few GETs as its
// adjacent ranges allow (ReadMany's spread 1): a sequential reader's GETs
// are few and large. Such a call holds up to 32 MiB, four units at once.
void ReadTilesEach(std::span<const TileRequest> tiles, bool encrypted, unsigned threads,
                   const TileSink& each, bool ahead = false);

// Cells [first, first + tile.cell_num) of a tile.
struct TilePart {
  uint64_t first = 0;
  DecodedTile tile;
};

// Where the chunks of a stored tile lie (MapChunks): kept by the caller so
// that later parts of the tile read only their chunks' bytes.
using ChunkMap = std::vector<ChunkSpan>;

// The chunks [first, second) of `map` that hold bytes [lo, hi) of the
// unfiltered tile (empty when none does).
std::pair<size_t, size_t> ChunksHolding(const ChunkMap& map, uint64_t lo, uint64_t hi);

// The cells of tile `tile` of `field` that the chunks holding cells [from,
// to) give, decoding only those chunks (a random read needing a few cells
// of a big tile, a reader streaming through many tiles at once). Fixed-size,
// non-nullable fields whose chunks hold whole cells; any other field, or
// chunks that cut a cell, get the whole tile (first 0).
// With `map`: if *map is set (a map of this tile from an earlier call),
// only the records of those chunks are read (a map that does not add up to
// the tile is kCorrupt); otherwise the whole stored tile is read, as
// without `map`, and on success *map is set to its chunks' places.
// Same errors as ReadTile, for the chunks decoded; kInvalidArgument when
// [from, to) is empty or not within the tile.
Result<TilePart> ReadTilePart(const FragmentMetadata& fragment, FieldRef field, uint64_t tile,
                              bool encrypted, uint64_t from, uint64_t to,
                              std::shared_ptr<const ChunkMap>* map = nullptr);

// Legacy zipped coordinates (format < 5): the __coords.tdb tile holds every
// dimension's value of a cell side by side. Splits tile `tile` into one
// DecodedTile per dimension.
Result<std::vector<DecodedTile>> ReadZippedCoordsTile(const FragmentMetadata& fragment,
                                                      uint64_t tile, bool encrypted);

}  // namespace tiledbfs::core
