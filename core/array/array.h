// An opened array: its listing, every schema, and views at timestamps.
//
// A view at T holds what TileDB shows for an array opened at [0, T]
// (TileDB's ArrayDirectory and readers are the reference):
//  - fragments: committed, not ignored, whose timestamp range lies within
//    [0, T]; for sparse arrays, fragments of format >= 15 are also taken when
//    their range merely overlaps [0, T] (their cells carry timestamps and are
//    filtered per cell). Vacuum files whose range is taken the same way retire
//    the fragments they list.
//  - the schema in force: the newest schema whose end timestamp <= T (the
//    oldest one if none), plus every schema fragments refer to.
//  - delete/update commits whose timestamp lies within [0, T].
//  - array metadata as of T.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/directory/array_directory.h"
#include "core/fragment/consolidated_fragment_meta.h"
#include "core/fragment/fragment_metadata.h"
#include "core/read/tile_cache.h"
#include "core/schema/array_schema.h"
#include "core/storage/storage.h"

namespace tiledbfs::core {

class ArrayView;

using SchemaMap = std::map<std::string, std::shared_ptr<const ArraySchema>>;

class Array {
 public:
  // Lists the array and loads its schemas. Errors: kNotFound (not an array),
  // kKey (encrypted and no key, or the key does not decrypt the schema),
  // kCorrupt/kUnsupported naming the file.
  static Result<std::shared_ptr<Array>> Open(std::shared_ptr<const Storage> storage,
                                             std::optional<EncryptionKey> key,
                                             const Limits& limits = DefaultLimits());

  const Storage& storage() const { return *storage_; }
  std::shared_ptr<const Storage> storage_ptr() const { return storage_; }
  const ArrayListing& listing() const { return listing_; }
  const SchemaMap& schemas() const { return schemas_; }
  const EncryptionKey* key() const { return key_ ? &*key_ : nullptr; }
  bool encrypted() const { return encrypted_; }
  const Limits& limits() const { return limits_; }

  // The schema in force at T.
  std::shared_ptr<const ArraySchema> SchemaAt(uint64_t t) const;
  // The newest schema (for array-wide decisions such as dense or sparse).
  std::shared_ptr<const ArraySchema> LatestSchema() const;

  // Every instant at which the array changed, ascending: schema timestamps,
  // fragment end timestamps, delete/update commits, metadata writes.
  Result<std::vector<uint64_t>> Instants() const;
  // The newest of Instants() (0 for an empty array).
  Result<uint64_t> LatestInstant() const;

  // The view at T (cached; views never change once built).
  Result<std::shared_ptr<const ArrayView>> ViewAt(uint64_t t);

  // Fragment metadata of one committed fragment (cached).
  Result<std::shared_ptr<FragmentMetadata>> Fragment(const FragmentEntry& entry);

  // Decoded tiles shared by this array's views.
  std::shared_ptr<TileCache> tile_cache() const { return tile_cache_; }
  void set_tile_cache(std::shared_ptr<TileCache> cache) { tile_cache_ = std::move(cache); }

  // True if the array folder changed since this Array was opened (a new
  // commit, vacuum or metadata file): the caller reopens. Cheap when the
  // folders' modification times say nothing changed (FolderStamps).
  bool Changed() const;

 private:
  // The modification times of the array folder and of its "__" folders,
  // taken before a listing. When they are unchanged and were already old
  // when taken ("settled": file systems stamp with a coarse clock, so a
  // change in the same tick as a recent stamp could keep it), the folder
  // has not changed since that listing and need not be listed again.
  struct FolderStamps {
    std::vector<std::pair<std::string, int64_t>> dirs;
    bool valid = false;
    bool settled = false;
  };
  static FolderStamps TakeStamps(const Storage& storage);

  Array() = default;
  // Loads the consolidated footers once (call with mu_ held).
  Status LoadConsolidatedFooters();

  std::shared_ptr<const Storage> storage_;
  std::optional<EncryptionKey> key_;
  bool encrypted_ = false;
  Limits limits_;
  ArrayListing listing_;
  SchemaMap schemas_;
  std::vector<std::shared_ptr<const ArraySchema>> schema_order_;  // by timestamp

  std::shared_ptr<TileCache> tile_cache_ = std::make_shared<TileCache>(uint64_t{64} << 20);
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<FragmentMetadata>> fragments_;  // by dir
  std::map<uint64_t, std::shared_ptr<const ArrayView>> views_;
  // Footers from __fragment_meta/*.meta (and legacy *.meta), by fragment
  // folder name; the first file that holds a fragment wins, as in TileDB.
  std::map<std::string, ConsolidatedFooter> consolidated_footers_;
  bool consolidated_loaded_ = false;
  mutable std::mutex stamps_mu_;
  mutable FolderStamps stamps_;  // taken before listing_ (or an equal listing)
};

}  // namespace tiledbfs::core
