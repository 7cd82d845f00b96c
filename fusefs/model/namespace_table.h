// The namespace of an array and of a group (docs/namespace.md "An array",
// "Diffs", "A group") as one table: what each kind of view shows at its
// top, in the order a listing gives, and what serves each entry. ArrayTree
// and GroupTree resolve, list and stat their own entries through this
// table alone (a group's members are its folders besides), and
// namespace_table_test.cc checks it against docs/namespace.md. A new
// document at a view's top is one row of kNamespace (namespace_table.cc)
// plus its renderer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/array/diff.h"
#include "core/metadata/metadata.h"
#include "core/storage/storage.h"
#include "core/util/limits.h"
#include "fusefs/model/tree.h"

namespace tiledbfs::fusefs {

// The kinds of view a folder of the namespace shows, a bit each so that a
// row names all those it appears in.
enum ViewKind : uint8_t {
  kRootView = 1 << 0,      // <root>/: live, or pinned by -o timestamp
  kHistoryView = 1 << 1,   // history/<ISO>/
  kSliceView = 1 << 2,     // slice/<ranges>/, also under history/<ISO>/
  kFragmentView = 1 << 3,  // fragments/<name>/, under any of the three above
  kDiffView = 1 << 4,      // diff/<T1>..<T2>/
  kGroupView = 1 << 5,     // a group's own entries, beside its members
};
// The views of the whole array, and those of cells (a fragment's too).
inline constexpr uint8_t kArrayViews = kRootView | kHistoryView | kSliceView;
inline constexpr uint8_t kCellViews = kArrayViews | kFragmentView;

// A group folder as of an instant, for its own files (kGroupView).
struct GroupFolder {
  const core::Storage* storage = nullptr;
  uint64_t timestamp = UINT64_MAX;
  const core::EncryptionKey* key = nullptr;
  core::Limits limits;
};

// A view and where in the namespace it is shown.
struct Scope {
  ViewKind kind = kRootView;
  std::shared_ptr<core::Array> array;
  std::shared_ptr<const core::ArrayView> view;       // null until resolved
  uint64_t at = 0;                                   // the instant asked for
  std::shared_ptr<core::FragmentMetadata> fragment;  // fragments/<name>/ only
  std::string key;                                   // cache key prefix, unique per view
  std::string slice;  // slice/<ranges>/: its <ranges> (kept below it)
  // diff/<T1>..<T2>/: the two instants (view: the one at T2).
  std::optional<std::pair<int64_t, int64_t>> diff;
  bool immutable = false;
  uint64_t snapshot = 0;  // OpenFile::snapshot_id of its files
  int64_t mtime_ms = 0;
  uint64_t latest = 0;  // the array's newest instant when resolved
  std::shared_ptr<const std::vector<core::Enumeration>> enums;  // of the view's schema
  const GroupFolder* group = nullptr;                           // kGroupView only
};

// A file whose bytes grow with the view's cells, streamed
// (streamed_file.h): a field's files, data.csv and data.parquet.
enum class CellKind { kFixed, kNpy, kValidity, kVarData, kVarOffsets, kTxt, kDataCsv, kParquet };

// How a file's bytes are served.
enum class FileKind : uint8_t {
  kDocument,     // small: rendered whole by the row's `render`, then cached
  kCells,        // streamed from the view's cells (the row's `cells`)
  kDiffSummary,  // a diff's summary.json, made with its CSV files (diff.h)
  kDiffCsv,      // a diff's CSV file (the row's `diff`), streamed
};

// What a folder holds, and so how its entries are listed and found.
enum class DirKind : uint8_t {
  kAttributes,  // <a>.bin|.offsets|.validity|.npy|.txt (column_files.h)
  kDimensions,  // the same for each dimension
  kMetadata,    // <key>: a document per array-metadata key
  kFragments,   // <name>/: a view of each fragment of the view on its own
  kHistory,     // <ISO>/: a view per instant; others resolve unlisted
  kSlices,      // <ranges>/: a view per box, unlisted
  kDiffs,       // <T1>..<T2>/: what changed between two instants, unlisted
};

// Whether the folder's entries are views (resolved as scopes of their own).
constexpr bool HoldsViews(DirKind d) {
  return d == DirKind::kFragments || d == DirKind::kHistory || d == DirKind::kSlices ||
         d == DirKind::kDiffs;
}
// Whether its views may never change (a fragment, a past instant): listed
// without rechecking the array's folders first.
constexpr bool HoldsFixedViews(DirKind d) {
  return d == DirKind::kFragments || d == DirKind::kHistory;
}

using DocumentRenderer = Result<std::string> (*)(const Scope&);

// One entry at the top of a view.
struct NamespaceEntry {
  std::string_view name;
  uint8_t views = 0;  // ViewKind bits: the views that show it
  NodeType type = NodeType::kFile;
  FileKind file = FileKind::kDocument;           // files
  DocumentRenderer render = nullptr;             // kDocument
  CellKind cells = CellKind::kDataCsv;           // kCells
  core::DiffKind diff = core::DiffKind::kAdded;  // kDiffCsv
  DirKind dir = DirKind::kAttributes;            // directories
  // Directories: their entries' names as docs/namespace.md writes them
  // ("<ISO>/": a folder).
  std::string_view child;
};

// Every row, in the order listings give them (each view lists its own).
std::span<const NamespaceEntry> NamespaceEntries();

// The entry `name` at the top of a view of `kind`; null if it has none.
const NamespaceEntry* FindEntry(ViewKind kind, std::string_view name);

// The array metadata as of the view (a group's, for kGroupView).
Result<std::map<std::string, core::MetadataValue>> ViewMetadata(const Scope& scope);
// metadata/<key> (`key` unescaped): its value as text; kNotFound if the
// view's metadata has no such key.
Result<std::string> RenderMetadataValue(const Scope& scope, const std::string& key);

}  // namespace tiledbfs::fusefs
