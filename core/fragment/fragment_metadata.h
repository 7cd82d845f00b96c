// Fragment metadata: __fragment_metadata.tdb in each fragment folder, or a
// footer inside a consolidated __fragment_meta/*.meta file. The footer is
// read eagerly (it is all that open and listing need); every other section
// (R-tree, tile offsets, var sizes, validity offsets, tile min/max/sum/null
// counts, processed conditions) is loaded lazily, once, on first use.
// Spec: format_spec/fragment.md, format_spec/consolidated_fragment_metadata_file.md.
//
// Footer (a plain blob at the end of the file; see fragment.md for the table):
//   version uint32; schema name (10+); dense; null NED flag; NED (MBR);
//   sparse tile num; last tile cell num; has timestamps (14+);
//   has delete meta (15+); file sizes, var sizes, validity sizes (7+);
//   section offsets; processed conditions offset (16+);
//   optional sections (23+); footer length uint64 (always since 10; before
//   10 only when a dimension is var-sized).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/schema/array_schema.h"
#include "core/directory/timestamped_name.h"
#include "core/storage/storage.h"

namespace tiledbfs::core {

inline bool HasValiditySections(uint32_t v) { return v >= 7; }
inline bool HasNumberedDataFiles(uint32_t v) { return v >= 9; }
inline bool HasSchemaName(uint32_t v) { return v >= 10; }
inline bool HasTileMetadata(uint32_t v) { return v >= 11; }
inline bool HasTimestampsFlag(uint32_t v) { return v >= 14; }
inline bool HasDeleteMetaFlag(uint32_t v) { return v >= 15; }
inline bool HasProcessedConditions(uint32_t v) { return v >= 16; }
inline bool HasOptionalSections(uint32_t v) { return v >= 23; }

// A stored field of a fragment. Footer arrays and data file names are
// indexed by FragmentMetadata::FieldIndex(field).
struct FieldRef {
  enum class Kind { kAttribute, kDimension, kCoords, kTimestamps, kDeleteTimestamps,
                    kDeleteConditionIndex };
  Kind kind = Kind::kAttribute;
  uint32_t index = 0;  // attribute or dimension index in the fragment's schema

  static FieldRef Attribute(uint32_t i) { return {Kind::kAttribute, i}; }
  static FieldRef Dimension(uint32_t i) { return {Kind::kDimension, i}; }
  static FieldRef Timestamps() { return {Kind::kTimestamps, 0}; }
  static FieldRef DeleteTimestamps() { return {Kind::kDeleteTimestamps, 0}; }
  static FieldRef DeleteConditionIndex() { return {Kind::kDeleteConditionIndex, 0}; }
  static FieldRef Coords() { return {Kind::kCoords, 0}; }
};

struct FragmentFooter {
  uint32_t version = 0;
  std::string array_schema_name;
  bool dense = false;
  bool null_non_empty_domain = false;
  std::vector<Range> non_empty_domain;  // one per dimension
  uint64_t sparse_tile_num = 0;
  uint64_t last_tile_cell_num = 0;
  bool has_timestamps = false;
  bool has_delete_meta = false;
  std::vector<uint64_t> file_sizes;           // per field index
  std::vector<uint64_t> file_var_sizes;       // per field index
  std::vector<uint64_t> file_validity_sizes;  // per field index
  uint64_t rtree_offset = 0;
  std::vector<uint64_t> tile_offsets_offsets;
  std::vector<uint64_t> tile_var_offsets_offsets;
  std::vector<uint64_t> tile_var_sizes_offsets;
  std::vector<uint64_t> tile_validity_offsets_offsets;
  std::vector<uint64_t> tile_min_offsets;
  std::vector<uint64_t> tile_max_offsets;
  std::vector<uint64_t> tile_sum_offsets;
  std::vector<uint64_t> tile_null_count_offsets;
  uint64_t fragment_min_max_sum_null_count_offset = 0;
  uint64_t processed_conditions_offset = 0;
  uint64_t footer_size = 0;  // bytes of the footer including its length field
};

// Per-tile statistics of one field (format 11+).
struct TileStats {
  std::vector<ByteVec> mins, maxs;  // per tile; var fields: the value bytes
  std::vector<uint64_t> sums;       // per tile (bytes of int64/uint64/double)
  std::vector<uint64_t> null_counts;
};

// Fragment-level min, max, sum, null count of one field.
struct FragmentStats {
  ByteVec min, max;
  uint64_t sum = 0;
  uint64_t null_count = 0;
};

class FragmentMetadata {
 public:
  // Loads the footer of `fragment_dir` (storage-relative, e.g.
  // "__fragments/__1_1_abc_22" or a legacy "__1_1_abc_5"). `schemas` maps
  // schema names to schemas; fragments older than 10 use `legacy_schema`
  // (the one named "__array_schema.tdb"). Errors carry the file path.
  static Result<std::shared_ptr<FragmentMetadata>> Load(
      std::shared_ptr<const Storage> storage, const std::string& fragment_dir,
      const TimestampedName& name,
      const std::map<std::string, std::shared_ptr<const ArraySchema>>& schemas,
      const EncryptionKey* key, const Limits& limits = DefaultLimits());

  // Same, but the footer comes from a consolidated metadata file (bytes
  // already read); lazy sections still come from the fragment's own file.
  static Result<std::shared_ptr<FragmentMetadata>> FromFooter(
      std::shared_ptr<const Storage> storage, const std::string& fragment_dir,
      const TimestampedName& name, Bytes footer, uint64_t footer_file_offset,
      const std::map<std::string, std::shared_ptr<const ArraySchema>>& schemas,
      const EncryptionKey* key, const Limits& limits = DefaultLimits());

  const std::string& dir() const { return dir_; }
  const TimestampedName& name() const { return name_; }
  const FragmentFooter& footer() const { return footer_; }
  const ArraySchema& schema() const { return *schema_; }
  std::shared_ptr<const ArraySchema> schema_ptr() const { return schema_; }
  uint32_t version() const { return footer_.version; }
  bool dense() const { return footer_.dense; }

  // Number of data tiles. Dense: tiles covering the non-empty domain
  // expanded to tile boundaries; sparse: the footer's count.
  uint64_t tile_num() const;
  // Cells in tile i: dense: cells per tile; sparse: capacity, last tile
  // last_tile_cell_num.
  uint64_t TileCellNum(uint64_t tile) const;
  // Total cells stored (dense: tile_num * cells per tile).
  uint64_t cell_num() const;

  // Footer index of a field, or -1 if the fragment does not store it.
  int FieldIndex(FieldRef f) const;
  // Storage paths of a field's data files (fixed or offsets; var; validity).
  std::string DataFile(FieldRef f) const;
  std::string VarFile(FieldRef f) const;
  std::string ValidityFile(FieldRef f) const;

  // Lazily loaded sections. Thread-safe; each loads once. Pointers stay
  // valid for the life of this object.
  Result<const std::vector<uint64_t>*> TileOffsets(FieldRef f) const;
  Result<const std::vector<uint64_t>*> TileVarOffsets(FieldRef f) const;
  Result<const std::vector<uint64_t>*> TileVarSizes(FieldRef f) const;
  Result<const std::vector<uint64_t>*> TileValidityOffsets(FieldRef f) const;
  // The R-tree's leaf level: one MBR (a Range per dimension) per tile.
  Result<const std::vector<std::vector<Range>>*> Mbrs() const;
  Result<const TileStats*> Stats(FieldRef f) const;                  // 11+
  Result<const std::vector<FragmentStats>*> FragmentStatistics() const;  // 11+
  Result<const std::vector<std::string>*> ProcessedConditions() const;   // 16+

  // On-disk byte range [offset, offset + size) of tile i in the field's
  // fixed/offsets file, var file or validity file (size from the next tile's
  // offset, or the file size for the last tile), checked against the file size.
  struct TileLocation {
    uint64_t offset = 0;
    uint64_t size = 0;
  };
  Result<TileLocation> FixedTile(FieldRef f, uint64_t tile) const;
  Result<TileLocation> VarTile(FieldRef f, uint64_t tile) const;
  Result<TileLocation> ValidityTile(FieldRef f, uint64_t tile) const;

  const Storage& storage() const { return *storage_; }
  const EncryptionKey* key() const { return key_; }

 private:
  FragmentMetadata() = default;
  struct Lazy;  // lazily loaded sections, guarded by mu_

  std::shared_ptr<const Storage> storage_;
  std::string dir_;
  TimestampedName name_;
  FragmentFooter footer_;
  std::shared_ptr<const ArraySchema> schema_;
  const EncryptionKey* key_ = nullptr;
  const Limits* limits_ = &DefaultLimits();
  mutable std::mutex mu_;
  mutable std::shared_ptr<Lazy> lazy_;
};

// Parses a footer given its bytes (exactly the footer, length field
// included) and the schema it refers to. `version_hint` is the version from
// the fragment's name, needed before 10 (see fragment.md). Errors: kCorrupt,
// kUnsupported (version newer than 23).
Result<FragmentFooter> ParseFragmentFooter(Bytes footer, uint64_t file_offset,
                                           const ArraySchema& schema, uint32_t version_hint);

}  // namespace tiledbfs::core
