// Generic tiles: a tile with a header, used for every metadata structure
// (schema, fragment metadata sections, commit lists, array metadata, groups).
// Spec: format_spec/generic_tile.md.
//
//   offset  type     field                  since
//   0       uint32   version number
//   4       uint64   persisted size         (bytes of tile data on disk)
//   12      uint64   tile size              (bytes after unfiltering)
//   20      uint8    datatype
//   21      uint64   cell size
//   29      uint8    encryption type        (0 none, 1 AES-256-GCM)
//   30      uint32   filter pipeline size
//   34      ...      filter pipeline, then `persisted size` bytes of tile data
#pragma once

#include <cstdint>
#include <string>

#include "core/filters/filter_pipeline.h"
#include "core/storage/storage.h"

namespace tiledbfs::core {

struct GenericTileHeader {
  uint32_t version = 0;
  uint64_t persisted_size = 0;
  uint64_t tile_size = 0;
  Datatype datatype = Datatype::kUInt8;
  uint64_t cell_size = 1;
  uint8_t encryption_type = 0;
  uint32_t filter_pipeline_size = 0;
  FilterPipeline filters;
  uint64_t header_size = 0;  // bytes from the start of the tile to its data
};

constexpr uint64_t kGenericTileFixedHeaderSize = 34;
// The newest format version a generic tile may carry (TileDB's
// constants::format_version at the time of writing).
constexpr uint32_t kMaxGenericTileVersion = 23;

// Encryption type byte (TileDB EncryptionType): 0 none, 1 AES-256-GCM. An
// AES-256-GCM tile lists the encryption filter (type 11, no options) as the
// last filter of its own pipeline; each chunk carries its IVs and tags in the
// chunk metadata (see core/filters/encryption.cc).
constexpr uint8_t kGenericTileNoEncryption = 0;
constexpr uint8_t kGenericTileAes256Gcm = 1;

// Parses a header at the reader's position. kCorrupt on truncation or bad
// fields (unknown datatype, a pipeline that disagrees with the encryption
// type, a pipeline longer or shorter than its stated size); kUnsupported for
// an unknown encryption type or filter, or a version newer than
// kMaxGenericTileVersion; kOutOfMemory when the tile size exceeds
// limits.max_metadata_bytes.
Result<GenericTileHeader> ParseGenericTileHeader(ByteReader& r, const Limits& limits);

struct GenericTile {
  ByteVec data;            // unfiltered payload, exactly header.tile_size bytes
  uint64_t disk_size = 0;  // header + persisted bytes: where the next tile starts
};

// Decodes the generic tile at the start of `bytes` (which may extend past it).
// `file` and `file_offset` name it in errors. An encrypted tile needs `key`
// (kKey if missing or wrong); a key given for an unencrypted tile is unused.
// The chunks must add up to exactly the header's tile size.
Result<GenericTile> DecodeGenericTile(Bytes bytes, const std::string& file, uint64_t file_offset,
                                      const EncryptionKey* key, const Limits& limits);

// Reads the header, then exactly the persisted bytes, from storage, and
// decodes. Errors carry `path` as context.
Result<GenericTile> ReadGenericTile(const Storage& storage, const std::string& path,
                                    uint64_t offset, const EncryptionKey* key,
                                    const Limits& limits);

}  // namespace tiledbfs::core
