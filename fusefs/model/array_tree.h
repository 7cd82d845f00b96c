// The namespace of one array (docs/namespace.md "An array"): the root view (live
// or pinned), history/<instant>/ views, fragments/<name>/ on their own, as
// namespace_table.h lays them out. array_tree.cc walks the namespace;
// array_tree_cells.cc serves the files streamed from a view's cells.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "fusefs/model/diff.h"
#include "fusefs/model/namespace_table.h"
#include "fusefs/model/parquet_file.h"
#include "fusefs/model/render_cache.h"
#include "fusefs/model/streamed_file.h"
#include "fusefs/model/tree.h"

namespace tiledbfs::fusefs {

// What data.parquet's sizes need counted of a view's fields, by field.
using ParquetCountsMap = std::map<std::string, ParquetCounts>;

// The byte budget of a mount (-o cache_size), shared by every array of it:
// half for decoded tiles, a quarter for small documents rendered whole, 1/16
// for the layouts of streamed files (streamed_file.h; an open streamed file
// also holds up to two rendered pieces of its own), 1/8 for the views of
// single fragments (fragments/<name>/) with their cell indexes, 1/32 for
// data.parquet's plans and the counts they come from.
struct TreeCaches {
  explicit TreeCaches(uint64_t budget)
      : tiles(std::make_shared<core::TileCache>(budget / 2)),
        files(budget / 4),
        layouts(budget / 16),
        fragment_views(budget / 8),
        parquet(budget / 64),
        parquet_counts(budget / 64) {}
  std::shared_ptr<core::TileCache> tiles;
  LruCache<std::string> files;
  LruCache<StreamLayout> layouts;
  LruCache<core::ArrayView> fragment_views;
  LruCache<ParquetSource> parquet;
  LruCache<ParquetCountsMap> parquet_counts;
  std::shared_ptr<core::HeapPolicy> heap;  // TreeOptions::heap

  // The mount serves (after a daemon's fork): the tile cache takes the heap
  // policy and warms for the first reads (TileCache::WarmForFirstReads).
  void Serving() {
    tiles->SetHeapPolicy(heap);
    tiles->WarmForFirstReads();
  }
};

class ArrayTree final : public Tree {
 public:
  // Opens and checks the array (schemas parse, key works, latest view's
  // fragment footers load).
  static Result<std::unique_ptr<ArrayTree>> Open(std::shared_ptr<const core::Storage> storage,
                                                 const TreeOptions& options,
                                                 std::shared_ptr<TreeCaches> caches);

  Result<NodeAttr> GetAttr(const std::string& path) override;
  Result<std::vector<DirEntryAttr>> List(const std::string& path) override;
  Result<std::unique_ptr<OpenFile>> Open(const std::string& path) override;
  Result<uint64_t> Refresh() override;
  void Serving() override { caches_->Serving(); }

  using Scope = fusefs::Scope;  // a view and where in the namespace it is shown

  // How many layout passes (streamed_file.h) this tree has run: what
  // listings and lookups must not cost (tests).
  uint64_t layout_passes() const { return layout_passes_.load(); }
  // How many views were laid out from an indexed view they extend
  // (ExtendIndexed), not by a pass.
  uint64_t layout_extensions() const { return layout_extensions_.load(); }
  // The windows whose counts views extending a base took from it
  // (ExtendIndexed: ArrayView::TakeCountsBefore) instead of counting them.
  uint64_t windows_taken() const { return windows_taken_.load(); }
  // Diffs served from the persistent index, with no pass (tests).
  uint64_t diffs_indexed() const { return diffs_indexed_.load(); }
  // Writes back to the index the counts of windows counted since their
  // view's entry was written (PartlyCounted).
  ~ArrayTree() override;

 private:
  ArrayTree() = default;

  // The array as last opened, with facts taken with it under one lock.
  struct Current {
    std::shared_ptr<core::Array> array;
    uint64_t generation = 0;  // of `array`
    uint64_t epoch = 0;       // of immutable content (Refresh)
    uint64_t latest = 0;      // the array's newest instant
  };
  // With `recheck` (opening a file, listing a directory, Refresh) the array
  // is reopened first if the folder changed, unless pinned.
  Result<Current> CurrentArray(bool recheck);
  // Resolves a path to (scope, rest of the path inside that scope): each
  // folder of views the table names (HoldsViews) leads into one of them.
  Result<std::pair<std::shared_ptr<Scope>, std::vector<std::string>>> Resolve(
      const std::string& path, bool recheck);
  // A view of `kind` at instant `at`, its view not built yet (LoadView).
  std::shared_ptr<Scope> ViewScope(const Current& current, ViewKind kind, uint64_t at);
  core::Status LoadView(Scope& scope);
  // The view `name` in the folder `dir` of `parent`. kNotFound with the
  // reason for a name that does not parse or names nothing.
  Result<std::shared_ptr<Scope>> Enter(DirKind dir, Scope& parent, const std::string& name,
                                       const Current& current);
  // slice/<name>/ under `parent` (the root or a history view): the view
  // restricted to the subarray the name gives, kept for later lookups.
  Result<std::shared_ptr<Scope>> SliceScope(const Scope& parent, const std::string& name);
  // fragments/<name>/ under `parent`: that fragment on its own.
  Result<std::shared_ptr<Scope>> FragmentScope(const Scope& parent, const std::string& name,
                                               const Current& current);
  // The files of a diff/<T1>..<T2>/ scope, computed once and kept.
  Result<std::shared_ptr<const DiffFiles>> Diff(const Scope& scope);
  // Enumerations of a schema, loaded once per schema.
  std::shared_ptr<const std::vector<core::Enumeration>> Enumerations(
      const core::Array& array, const core::ArraySchema& schema);
  // A file whose bytes grow with the view's cells: streamed (streamed_file.h),
  // never materialised whole.
  struct CellFile {
    using Kind = CellKind;
    Kind kind = Kind::kDataCsv;
    bool dimension = false;  // a file of dimensions/ (else attributes/)
    std::string field;       // empty for data.csv
    core::Datatype type = core::Datatype::kInt32;
    uint32_t cell_val_num = 1;

    uint64_t cell_size() const { return core::DatatypeSize(type) * cell_val_num; }
    // Names the file's layout in the caches, with the view's key before it.
    std::string LayoutKey() const;
  };

  // The field file `name` of attributes/ or dimensions/; kNotFound for a
  // field or a file the field does not have.
  Result<CellFile> FieldFile(const Scope& scope, bool dimension, const std::string& name);
  // Its size: from the cell count for fixed-stride files, else from its
  // layout (computed once, then cached).
  Result<uint64_t> CellFileSize(const Scope& scope, const CellFile& f);
  Result<std::unique_ptr<OpenFile>> OpenCellFile(const Scope& scope, const CellFile& f);
  // With `counts`: also data.parquet's counts from the same pass.
  Result<std::shared_ptr<const StreamLayout>> Layout(
      const Scope& scope, const CellFile& f,
      std::shared_ptr<const ParquetCountsMap>* counts = nullptr);
  // data.parquet's plan: from the cell count alone where no field needs
  // counting, else from the view's layout pass; cached.
  Result<std::shared_ptr<const ParquetSource>> Parquet(const Scope& scope);
  struct PendingLayout;
  // The layouts of a view's text files into the cache (and `pending`, if
  // any); returns the one cached under `key`, if any.
  std::shared_ptr<const StreamLayout> PutLayouts(const Scope& scope, ViewLayouts all,
                                                 PendingLayout* pending, const std::string& key);
  // The persistent index (TreeOptions::index): what it keeps of a view is
  // keyed by the view's cells (ArrayView::Identity), the versions of the
  // files they come from (Array::FileVersions) and how its files are cut;
  // nullopt where those files cannot be listed (nothing is then kept or
  // looked up). FromIndex gives the view back its windows' counts, caches its
  // text files' layouts (PutLayouts) and returns the one under `key`; null
  // where there is none (no index, no entry, or one that does not fit: the
  // pass then runs, and ToIndex replaces it).
  std::optional<std::string> IndexKey(const Scope& scope) const;
  // The index's key for the diff of `scope` (its view the later side) from
  // `from`: both views' cells and files; nullopt where a file cannot be
  // listed.
  std::optional<std::string> DiffIndexKey(const Scope& scope, const core::ArrayView& from) const;
  std::shared_ptr<const StreamLayout> FromIndex(const Scope& scope, PendingLayout* pending,
                                                const std::string& key);
  void ToIndex(const Scope& scope, const ViewLayouts& layouts);
  // Appends: ToIndex also keeps, per array, the root view it last indexed
  // with its fragments (the base). A view whose fragments are the base's
  // plus others lying past the base's last row (the first dimension an
  // integer; no slice, deletes or updates) has the base's cells first, in
  // the same order: ExtendIndexed lays it out from the base's layouts and
  // a slice holding the other cells alone (ExtendViewLayouts), so that an
  // append costs its own cells. nullopt where that does not hold.
  void ToBase(const Scope& scope, const std::string& index_key, uint64_t cells);
  Result<std::optional<ViewLayouts>> ExtendIndexed(const Scope& scope,
                                                   const std::vector<std::string>& fields,
                                                   uint64_t cells, uint64_t piece);
  // A file of the namespace, found: what serves its bytes (one of three).
  struct FileRef {
    std::shared_ptr<const std::string> document;  // rendered whole
    std::optional<CellFile> cells;
    std::optional<DiffCsvFile> diff_csv;
  };
  // The file `rest` names in `scope`; kNotFound if none. Documents are
  // rendered (and cached) here.
  Result<FileRef> FileAt(const Scope& scope, const std::vector<std::string>& rest);
  Result<NodeAttr> Attr(const Scope& scope, const std::vector<std::string>& rest);
  Result<std::vector<DirEntryAttr>> ListDir(const Scope& scope, const NamespaceEntry& dir);

  std::shared_ptr<const core::Storage> storage_;
  TreeOptions options_;
  std::shared_ptr<TreeCaches> caches_;
  std::mutex mu_;
  std::shared_ptr<core::Array> array_;
  uint64_t id_ = 0;          // unique per tree: caches are shared by a group's members
  uint64_t generation_ = 0;  // bumps at each reopen: part of cache keys
  // Bumps at a reopen that changed a past view (see OnlyAppended).
  uint64_t epoch_ = 0;
  uint64_t latest_ = 0;  // array_->LatestInstant()
  std::map<std::string, std::shared_ptr<const std::vector<core::Enumeration>>> enums_;
  // fragments/<name>: per view (key), its fragments by name (counted in
  // entries, not bytes).
  using FragmentMap = std::map<std::string, std::shared_ptr<core::FragmentMetadata>>;
  LruCache<FragmentMap> fragment_maps_{64};
  // slice/<name>/ views with their cell indexes, by scope key (counted in
  // entries: an index is built once per slice while it is in use).
  LruCache<core::ArrayView> slice_views_{16};
  // diff/<T1>..<T2>/ files by scope key (bytes), computed under diff_mu_.
  LruCache<DiffFiles> diffs_{64 << 20};
  std::mutex diff_mu_;
  std::pair<std::string, std::shared_ptr<const DiffFiles>> last_diff_;  // (diff_mu_)
  std::atomic<uint64_t> layout_passes_{0};
  std::atomic<uint64_t> layout_extensions_{0};
  std::atomic<uint64_t> windows_taken_{0};
  std::atomic<uint64_t> diffs_indexed_{0};
  // Views whose index entry holds the counts of only some of their windows
  // (an append's: TakeCountsBefore), by index key, with those counts: the
  // windows a read counts later are written back to the entry when the
  // tree goes (under mu_).
  struct PartlyCounted {
    std::weak_ptr<const core::ArrayView> view;
    std::string counts;
  };
  std::map<std::string, PartlyCounted> partly_counted_;
  // Notes a view whose entry under `index_key` holds `counts` (PartlyCounted).
  void NotePartlyCounted(const Scope& scope, const std::string& index_key, std::string counts);
  std::set<std::string> index_missing_;  // views FromIndex did not find (under mu_)
  std::set<std::string> index_counted_;  // views whose counts were looked up (under mu_)
  // Layout passes under way, by cache key (under mu_).
  // A view's layout pass under way (one per view: it lays out every text
  // file of the view) and, once done, what it made, by cache key.
  struct PendingLayout {
    std::mutex mu;  // held for the pass
    std::map<std::string, std::shared_ptr<const StreamLayout>> layouts;
    std::shared_ptr<const ParquetCountsMap> counts;
  };
  std::map<std::string, std::shared_ptr<PendingLayout>> pending_layouts_;
};

}  // namespace tiledbfs::fusefs
