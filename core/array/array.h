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
//
// Cost (issue 5, target 4: 10,000 fragments): Open reads only the listing and
// the schemas. ViewAt(T) loads the footers of fragments it takes that no
// earlier view loaded (each at most once per Array), computes the view's
// instant in O(log n), and leaves the view's fragment list to be gathered on
// first use, so that stating history/<T> for every instant stays cheap. Views
// are cached: the last kCachedViews used are kept, and a view still held
// elsewhere (an open file) is found again rather than rebuilt.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/directory/array_directory.h"
#include "core/fragment/consolidated_fragment_meta.h"
#include "core/fragment/fragment_metadata.h"
#include "core/read/cell_index.h"
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
                                             const Limits& limits);

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
  // The instant the view at T shows (ArrayView::instant()), without building
  // the view or reading anything: O(log n) plus the fragments that retire or
  // carry ranges wider than one instant.
  uint64_t InstantAt(uint64_t t) const;

  // The view at T (views never change once built; see the cache above).
  Result<std::shared_ptr<const ArrayView>> ViewAt(uint64_t t);
  // Views kept by the cache beyond those held elsewhere.
  static constexpr size_t kCachedViews = 16;

  // Fragment metadata of one committed fragment (cached).
  Result<std::shared_ptr<FragmentMetadata>> Fragment(const FragmentEntry& entry);

  // Decoded tiles shared by this array's views.
  std::shared_ptr<TileCache> tile_cache() const { return tile_cache_; }
  void set_tile_cache(std::shared_ptr<TileCache> cache) { tile_cache_ = std::move(cache); }

  // What the files `view` reads hold, as far as their listings tell without
  // reading them: the sizes and versions (DirEntry::version) of its schema
  // folder's files, of each fragment's and of each delete commit. For keys
  // of what is computed from those bytes (the persistent index): a fragment
  // rewritten under its name, or a damaged copy of an array whose names and
  // sizes match, gets another key. Each top folder is listed once per Array
  // (Storage::ListTree), and only its digests are kept.
  Result<std::string> FileVersions(const ArrayView& view) const;
  // Its parts: the lines of the view schema's files (and enumerations),
  // and the digest of one fragment's files.
  Result<std::string> SchemaVersions(const ArraySchema& schema) const;
  Result<std::string> FragmentVersion(const FragmentMetadata& fragment) const;

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
  // With `previous` settled and the array folder's own time unchanged, its
  // "__" folders are the previous ones (an entry added or removed would have
  // changed that time): they are stamped without listing the folder again,
  // which every directory listing of the mount does (Changed).
  static FolderStamps TakeStamps(const Storage& storage, const FolderStamps* previous = nullptr);

  // When committed fragment i (listing order) is in a view at t: from t =
  // `from` on, until t = `until` if `retired` (from the first vacuum file in
  // view that lists it).
  struct Span {
    uint64_t from = 0, t2 = 0, until = 0;
    bool retired = false;
    bool In(uint64_t t) const { return from <= t && !(retired && until <= t); }
  };
  // The loaded footers by fragment index, shared with the views that gather
  // their fragment lists lazily. Slot i is set once, under mu_, before any
  // view that takes fragment i is returned.
  struct FragmentTable {
    std::vector<Span> spans;
    std::vector<std::shared_ptr<FragmentMetadata>> loaded;
    // Fragments of the views at t, oldest first (all loaded).
    std::vector<std::shared_ptr<FragmentMetadata>> At(uint64_t t) const;
  };

  Array() = default;
  // Computes spans, instants and the lookup tables from listing_ (no I/O).
  void Index();
  // Loads the footers of fragment indexes `want` not loaded yet, up to the
  // storage's PreferredParallelism at once.
  Status LoadFragments(const std::vector<size_t>& want);
  // Loads the consolidated footers once (call with mu_ held).
  Status LoadConsolidatedFooters();
  Result<std::shared_ptr<FragmentMetadata>> LoadFragment(const FragmentEntry& entry);

  std::shared_ptr<const Storage> storage_;
  std::optional<EncryptionKey> key_;
  bool encrypted_ = false;
  Limits limits_;
  ArrayListing listing_;
  SchemaMap schemas_;
  std::vector<std::shared_ptr<const ArraySchema>> schema_order_;  // by timestamp

  std::shared_ptr<TileCache> tile_cache_ = std::make_shared<TileCache>(uint64_t{64} << 20);
  std::mutex mu_;
  std::shared_ptr<FragmentTable> table_ = std::make_shared<FragmentTable>();
  std::unordered_map<std::string, size_t> fragment_index_;  // dir -> index in listing_.fragments
  // Fragments whose span is a single instant and never retired ("narrow"),
  // by `from`, with the running maximum of t2: InstantAt by binary search.
  std::vector<uint64_t> narrow_from_, narrow_max_t2_;
  std::vector<size_t> narrow_order_;      // fragment index of narrow_from_[k]
  size_t narrow_loaded_ = 0;              // narrow_order_[0, narrow_loaded_) all loaded
  std::vector<size_t> other_frags_;       // the rest: checked one by one
  std::vector<uint64_t> other_instants_;  // schemas, conditions, metadata, sorted
  std::vector<uint64_t> instants_;        // Instants()
  std::vector<std::optional<DeleteRule>> delete_rules_;  // by condition index
  // View cache: strong references to the last kCachedViews used (most
  // recent first), and every view still alive by timestamp.
  std::list<std::pair<uint64_t, std::shared_ptr<const ArrayView>>> recent_views_;
  std::map<uint64_t, std::weak_ptr<const ArrayView>> live_views_;
  // Footers from __fragment_meta/*.meta (and legacy *.meta): the decoded
  // files, and their entries sorted by fragment folder name (views into
  // those files), one per name: the first file that holds a fragment wins,
  // as in TileDB.
  std::vector<ConsolidatedFragmentMeta> consolidated_files_;
  std::vector<const ConsolidatedFooter*> consolidated_footers_;
  bool consolidated_loaded_ = false;
  // A digest of the files at or under `path` (FileVersions), with
  // versions_mu_ held.
  Result<std::string> VersionOf(const std::string& path) const;
  // Appends SchemaVersions' lines to `out`, with versions_mu_ held.
  Status AddSchemaVersions(const ArraySchema& schema, std::string& out) const;
  mutable std::mutex versions_mu_;
  mutable std::unordered_map<std::string, std::string> versions_;  // path -> digest
  mutable std::set<std::string> versions_listed_;                  // top folders listed
  mutable std::mutex stamps_mu_;
  mutable FolderStamps stamps_;  // taken before listing_ (or an equal listing)
};

}  // namespace tiledbfs::core
