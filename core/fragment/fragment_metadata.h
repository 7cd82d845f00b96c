// Fragment metadata: __fragment_metadata.tdb in each fragment folder, or a
// footer inside a consolidated __fragment_meta/*.meta file. The footer is
// read eagerly (it is all that open and listing need); every other section
// (R-tree, tile offsets, var sizes, validity offsets, tile min/max/sum/null
// counts, processed conditions) is loaded lazily, once, on first use.
// Spec: format_spec/fragment.md, format_spec/consolidated_fragment_metadata_file.md.
//
// Pieces, one header each:
//   fragment_footer.h             the footer (3+), field indexing, predicates
//   fragment_sections.h           the lazily loaded generic tiles
//   legacy_fragment_metadata.h    the whole-file metadata of formats 1-2
//   consolidated_fragment_meta.h  __fragment_meta/*.meta files
//   dense_tile_grid.h             which space tiles a dense fragment stores
//
// Locating the footer in __fragment_metadata.tdb: from 10 on, and before 10
// when a dimension is var-sized, the file ends with the footer's length
// (uint64); otherwise (3-9, all dimensions fixed) the size is computed from
// the schema. Which rule applies before the footer is read comes from the
// version in the fragment's folder name.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/directory/timestamped_name.h"
#include "core/fragment/consolidated_fragment_meta.h"
#include "core/fragment/dense_tile_grid.h"
#include "core/fragment/fragment_footer.h"
#include "core/fragment/fragment_sections.h"
#include "core/schema/array_schema.h"
#include "core/storage/storage.h"

namespace tiledbfs::core {

inline constexpr const char* kFragmentMetadataFile = "__fragment_metadata.tdb";

class FragmentMetadata {
 public:
  // Loads the footer of `fragment_dir` (storage-relative, e.g.
  // "__fragments/__1_1_abc_22" or a legacy "__1_1_abc_5"). `schemas` maps
  // schema names to schemas; fragments older than 10 use the one named
  // "__array_schema.tdb" (kLegacySchemaName). The footer's version and
  // schema name are read first, then the schema is looked up, then the rest
  // is parsed. Formats 1-2 read the whole (legacy) file, sections included.
  // Errors carry the file path: kNotFound (no metadata file, or the schema
  // is not in `schemas`), kCorrupt, kUnsupported (version > 23), kKey, kIo.
  static Result<std::shared_ptr<FragmentMetadata>> Load(
      std::shared_ptr<const Storage> storage, const std::string& fragment_dir,
      const TimestampedName& name,
      const std::map<std::string, std::shared_ptr<const ArraySchema>>& schemas,
      const EncryptionKey* key, const Limits& limits);

  // Same, but the footer comes from a consolidated metadata file
  // (ConsolidatedFooter::footer: the footer fields without length field,
  // possibly followed by other bytes); lazy sections still come from the
  // fragment's own file. `footer_file_offset` only names the footer in
  // messages. kInvalidArgument for a format 1-2 fragment (never consolidated).
  static Result<std::shared_ptr<FragmentMetadata>> FromFooter(
      std::shared_ptr<const Storage> storage, const std::string& fragment_dir,
      const TimestampedName& name, Bytes footer, uint64_t footer_file_offset,
      const std::map<std::string, std::shared_ptr<const ArraySchema>>& schemas,
      const EncryptionKey* key, const Limits& limits);

  const std::string& dir() const { return dir_; }
  const TimestampedName& name() const { return name_; }
  const FragmentFooter& footer() const { return footer_; }
  const ArraySchema& schema() const { return *schema_; }
  std::shared_ptr<const ArraySchema> schema_ptr() const { return schema_; }
  uint32_t version() const { return footer_.version; }
  // What this fragment's readers may allocate (Load's `limits`).
  const Limits& limits() const { return limits_; }
  bool dense() const { return footer_.dense; }
  // Whether the footer came from a consolidated fragment metadata file.
  bool has_consolidated_footer() const { return has_consolidated_footer_; }
  // Path of __fragment_metadata.tdb.
  std::string metadata_file() const;

  // Number of data tiles. Dense: tiles covering the non-empty domain
  // expanded to tile boundaries (0 if the domain is null); sparse: the
  // footer's count.
  uint64_t tile_num() const;
  // Cells in tile i: dense: cells per tile; sparse: capacity, last tile
  // last_tile_cell_num.
  uint64_t TileCellNum(uint64_t tile) const;
  // Total cells stored (dense: tile_num * cells per tile, as TileDB counts;
  // sparse: (tile_num - 1) * capacity + last_tile_cell_num).
  uint64_t cell_num() const;
  // Dense fragments: the tile grid (empty grid when the domain is null).
  const DenseTileGrid& dense_grid() const { return grid_; }

  // Number of fields N the footer arrays hold (see fragment_footer.h).
  uint64_t FieldCount() const;
  // Footer index of a field, or -1 if the fragment does not store it.
  int FieldIndex(FieldRef f) const;
  // Storage paths of a field's data files (fixed or offsets; var; validity);
  // "" when FieldIndex(f) is -1.
  std::string DataFile(FieldRef f) const;
  std::string VarFile(FieldRef f) const;
  std::string ValidityFile(FieldRef f) const;

  // Bytes of the fragment as TileDB's fragment info reports them: the
  // footer's file sizes, var sizes and validity sizes plus the size of
  // __fragment_metadata.tdb (read from storage once when the footer came
  // from a consolidated file).
  Result<uint64_t> FragmentSize() const;

  // Lazily loaded sections. Thread-safe; each loads once (a failed load is
  // retried on the next call). Pointers stay valid for the life of this
  // object. Errors: kNotFound (the fragment does not store the field, or
  // the section does not exist in this format version), kCorrupt, kKey, kIo.
  // Tile offsets hold tile_num() entries (TileDB writes zeros for a slot
  // without data: dimensions of dense fragments, coords 5+), or none.
  // The four per-field lists of tile positions, one loader behind them.
  enum class TileList { kOffsets, kVarOffsets, kVarSizes, kValidityOffsets /* 7+ */ };
  using TilePositions = Result<const std::vector<uint64_t>*>;
  TilePositions List(TileList which, FieldRef f) const;
  TilePositions TileOffsets(FieldRef f) const { return List(TileList::kOffsets, f); }
  TilePositions TileVarOffsets(FieldRef f) const { return List(TileList::kVarOffsets, f); }
  TilePositions TileVarSizes(FieldRef f) const { return List(TileList::kVarSizes, f); }
  TilePositions TileValidityOffsets(FieldRef f) const {
    return List(TileList::kValidityOffsets, f);
  }
  // The R-tree's leaf level: one MBR (a Range per dimension) per tile.
  // Dense fragments usually have none.
  Result<const std::vector<std::vector<Range>>*> Mbrs() const;
  Result<const TileStats*> Stats(FieldRef f) const;                      // 11+
  Result<const std::vector<FragmentStats>*> FragmentStatistics() const;  // 12+
  // Delete/update conditions already applied to this fragment (empty
  // before 16).
  Result<const std::vector<std::string>*> ProcessedConditions() const;

  // On-disk byte range [offset, offset + size) of tile i in the field's
  // fixed/offsets file, var file or validity file (size from the next tile's
  // offset, or the file size for the last tile), checked against the file
  // size from the footer. kInvalidArgument if tile >= the tile count.
  // The one tile of a fragment of one tile (format 3+) is the whole file,
  // [0, file size from the footer), without loading the tile offsets:
  // TileDB appends each tile at the file's size so far, from 0
  // (FragmentMetadata::set_tile_offset), so that section holds a single 0.
  // A view of many small fragments then reads no __fragment_metadata.tdb
  // for its data (issue 5: 10,000 fewer opens and section decodes); a
  // damaged section of such a fragment is reported when it is needed
  // (tiles.csv, var sizes), not by reads of fixed-size fields.
  struct TileLocation {
    uint64_t offset = 0;
    uint64_t size = 0;
  };
  Result<TileLocation> FixedTile(FieldRef f, uint64_t tile) const;
  Result<TileLocation> VarTile(FieldRef f, uint64_t tile) const;
  Result<TileLocation> ValidityTile(FieldRef f, uint64_t tile) const;

  const Storage& storage() const { return *storage_; }
  const EncryptionKey* key() const { return key_ ? &*key_ : nullptr; }

 private:
  FragmentMetadata() = default;
  struct Lazy;  // lazily loaded sections, one lock per section
  Lazy& Slots() const;

  static Result<std::shared_ptr<FragmentMetadata>> LoadLegacy(
      std::shared_ptr<const Storage> storage, const std::string& fragment_dir,
      const TimestampedName& name,
      const std::map<std::string, std::shared_ptr<const ArraySchema>>& schemas,
      const EncryptionKey* key, const Limits& limits);
  // Sets the schema, grid and lazy slots after footer_ is parsed.
  Status Init();
  // A __fragment_metadata.tdb of at most kWholeFileBytes is read in one
  // piece on the first use of a section, and the sections a read needs
  // (tile offsets, var offsets and sizes, validity offsets, R-tree,
  // processed conditions) are parsed from it at once: one storage read
  // instead of two or three per section (issue 5: many small fragments).
  // Statistics stay lazy. A section that fails to parse here is left for
  // its accessor to load (and report) as usual.
  static constexpr uint64_t kWholeFileBytes = 64 * 1024;
  void Prefetch() const;
  void PrefetchOnce() const;  // Prefetch's body, run once
  TilePositions TileListOnce(TileList which, FieldRef f) const;
  // How many values TileList has.
  static constexpr size_t kTileLists = 4;
  Result<const std::vector<std::vector<Range>>*> MbrsOnce() const;
  Result<const std::vector<std::string>*> ProcessedConditionsOnce() const;
  std::string FieldFileBase(FieldRef f) const;
  Result<int> CheckedIndex(FieldRef f) const;
  Result<ByteVec> ReadSection(uint64_t offset, std::string_view what) const;
  // Tile `tile` is the only one of a format 3+ fragment (see FixedTile).
  bool OnlyTile(uint64_t tile) const;
  Result<TileLocation> Locate(const std::vector<uint64_t>& offsets, uint64_t file_size,
                              uint64_t tile, std::string_view what, FieldRef f) const;

  std::shared_ptr<const Storage> storage_;
  std::string dir_;
  TimestampedName name_;
  FragmentFooter footer_;
  std::shared_ptr<const ArraySchema> schema_;
  // A copy: views (and their fragments) may outlive the Array whose key
  // they were loaded with.
  std::optional<EncryptionKey> key_;
  Limits limits_;
  bool has_consolidated_footer_ = false;
  // Offset of the footer in __fragment_metadata.tdb (sections lie before
  // it); unknown (nullopt) when the footer came from a consolidated file.
  std::optional<uint64_t> footer_offset_;
  DenseTileGrid grid_;
  mutable std::mutex mu_;  // guards meta_file_size_
  mutable std::optional<uint64_t> meta_file_size_;
  // Once-only steps without std::call_once, whose glibc implementation
  // makes a futex system call on every first run (two per fragment).
  mutable std::mutex lazy_mu_;
  mutable std::atomic<bool> lazy_made_{false};
  mutable std::shared_ptr<Lazy> lazy_;  // made by Slots()
  mutable std::mutex prefetch_mu_;
  mutable std::atomic<bool> prefetched_{false};
  // The whole metadata file while Prefetch parses it (guarded by mu_).
  mutable std::shared_ptr<const ByteVec> whole_file_;
};

}  // namespace tiledbfs::core
