#include "fusefs/model/array_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/metadata/metadata.h"
#include "core/util/text.h"
#include "fusefs/model/diff.h"
#include "fusefs/model/documents.h"
#include "fusefs/model/instant.h"
#include "fusefs/model/names.h"
#include "fusefs/model/slice_name.h"
#include "fusefs/model/string_file.h"
#include "fusefs/render/column_files.h"
#include "fusefs/render/csv.h"
#include "fusefs/render/npy.h"
#include "fusefs/render/value_text.h"

namespace tiledbfs::fusefs {

using core::Error;
using core::FragmentMetadata;
using Json = nlohmann::ordered_json;

// Where a view is shown: the root, history/<T>/ or fragments/<name>/.
struct ArrayTree::Scope {
  std::shared_ptr<core::Array> array;
  std::shared_ptr<const core::ArrayView> view;
  std::shared_ptr<FragmentMetadata> fragment;  // fragments/<name>/ only
  std::string key;                             // cache key prefix, unique per view
  bool root = false;                           // has history/
  bool sliced = false;                         // slice/<ranges>/: no history/ nor slice/
  std::string slice;                           // its <ranges>
  // diff/<T1>..<T2>/: the two instants (view: the one at T2).
  std::optional<std::pair<int64_t, int64_t>> diff;
  bool immutable = false;
  uint64_t snapshot = 0;  // OpenFile::snapshot_id of its files
  int64_t mtime_ms = 0;
  std::shared_ptr<const std::vector<core::Enumeration>> enums;  // of the view's schema
};

namespace {

constexpr const char* kAttributes = "attributes";
constexpr const char* kDimensions = "dimensions";

std::string Dump(const Json& j) { return core::DumpJsonText(j, 2) + "\n"; }

bool IsFragmentScope(const ArrayTree::Scope& s) { return s.fragment != nullptr; }

// The files a full view (root or history) shows at its top.
std::vector<std::string> ViewTopNames(const ArrayTree::Scope& s) {
  if (IsFragmentScope(s)) {
    return {"attributes",    "data.csv",     "data.parquet", "dimensions",
            "fragment.json", "fragment.txt", "tiles.csv"};
  }
  std::vector<std::string> v = {"attributes",  "data.csv",  "data.parquet", "dimensions",
                                "fragments",   "log.txt",   "metadata",     "metadata.json",
                                "schema.json", "schema.txt"};
  if (s.root) v.insert(v.begin() + 5, "history");
  if (!s.sliced) v.insert(std::find(v.begin(), v.end(), "schema.json") + 1, "slice");
  if (s.root) v.insert(std::find(v.begin(), v.end(), "dimensions") + 1, "diff");
  return v;
}

bool IsDirName(const std::string& n) {
  return n == "attributes" || n == "dimensions" || n == "fragments" || n == "metadata" ||
         n == "history" || n == "slice" || n == "diff";
}

}  // namespace

Result<std::unique_ptr<ArrayTree>> ArrayTree::Open(std::shared_ptr<const core::Storage> storage,
                                                   const TreeOptions& options,
                                                   std::shared_ptr<TreeCaches> caches) {
  static std::atomic<uint64_t> next_id{1};
  std::unique_ptr<ArrayTree> t(new ArrayTree());
  t->id_ = next_id++;
  t->storage_ = std::move(storage);
  t->options_ = options;
  t->caches_ = std::move(caches);
  ASSIGN_OR_RETURN(t->array_, core::Array::Open(t->storage_, options.key));
  t->array_->set_tile_cache(t->caches_->tiles);
  ASSIGN_OR_RETURN(t->latest_, t->array_->LatestInstant());
  // Check now what every read will need: the footers of the root view.
  uint64_t at = options.timestamp_ms ? static_cast<uint64_t>(*options.timestamp_ms) : UINT64_MAX;
  ASSIGN_OR_RETURN(auto view, t->array_->ViewAt(at));
  (void)view;
  return t;
}

Result<ArrayTree::Current> ArrayTree::CurrentArray(bool recheck) {
  std::lock_guard<std::mutex> lock(mu_);
  if (recheck && !options_.timestamp_ms && array_->Changed()) {
    ASSIGN_OR_RETURN(std::shared_ptr<core::Array> fresh, core::Array::Open(storage_, options_.key));
    ASSIGN_OR_RETURN(uint64_t latest, fresh->LatestInstant());
    fresh->set_tile_cache(caches_->tiles);
    if (!core::OnlyAppended(array_->listing(), latest_, fresh->listing())) ++epoch_;
    array_ = std::move(fresh);
    latest_ = latest;
    ++generation_;
  }
  // Read with the array, under the same lock: a reopen by another thread in
  // between would give an old view the new generation's cache keys.
  return Current{array_, generation_, epoch_, latest_};
}

Result<uint64_t> ArrayTree::Refresh() {
  ASSIGN_OR_RETURN(Current current, CurrentArray(true));
  return current.epoch;
}

Result<std::pair<std::shared_ptr<ArrayTree::Scope>, std::vector<std::string>>> ArrayTree::Resolve(
    const std::string& path, bool recheck) {
  std::vector<std::string> parts = SplitPath(path);
  ASSIGN_OR_RETURN(Current current, CurrentArray(recheck));
  const std::shared_ptr<core::Array>& array = current.array;
  const uint64_t gen = current.generation;
  auto scope = std::make_shared<Scope>();
  scope->array = array;
  uint64_t t;
  size_t used = 0;
  bool history = !parts.empty() && parts[0] == "history";
  if (history && parts.size() >= 2) {
    std::optional<int64_t> at = ParseInstant(parts[1]);
    if (!at || *at < 0) return Error::NotFound(fmt::format("history/{}: not an instant", parts[1]));
    t = static_cast<uint64_t>(*at);
    used = 2;
  } else if (options_.timestamp_ms) {
    t = static_cast<uint64_t>(*options_.timestamp_ms);
    scope->root = true;
  } else {
    t = UINT64_MAX;
    scope->root = true;
  }
  ASSIGN_OR_RETURN(scope->view, array->ViewAt(t));
  scope->mtime_ms = static_cast<int64_t>(scope->view->instant());
  scope->key = fmt::format("a{}/g{}/t{}/", id_, gen, t);
  // A view up to the newest instant changes only when a past view is
  // rewritten (epoch); a later one also with the next commit (generation).
  // The top bit keeps the two kinds of snapshot ids apart.
  scope->immutable = t <= current.latest;
  scope->snapshot = scope->immutable ? (uint64_t{1} << 63 | (current.epoch + 1)) : gen + 1;
  if (used == 2) scope->root = false;
  // diff/<T1>..<T2>/...: what changed between two instants.
  if (scope->root && parts.size() >= 2 && parts[0] == "diff") {
    std::optional<std::pair<int64_t, int64_t>> span = ParseDiffName(parts[1]);
    if (!span) {
      return Error::NotFound(fmt::format("diff/{}: not two instants T1..T2", parts[1]));
    }
    auto d = std::make_shared<Scope>(*scope);
    d->root = false;
    d->diff = span;
    ASSIGN_OR_RETURN(d->view, array->ViewAt(static_cast<uint64_t>(span->second)));
    d->key = fmt::format("a{}/g{}/d{}..{}/", id_, gen, span->first, span->second);
    d->immutable = static_cast<uint64_t>(std::max(span->first, span->second)) <= current.latest;
    d->snapshot = d->immutable ? (uint64_t{1} << 63 | (current.epoch + 1)) : gen + 1;
    d->mtime_ms = static_cast<int64_t>(
        array->InstantAt(static_cast<uint64_t>(std::max(span->first, span->second))));
    std::vector<std::string> rest(parts.begin() + 2, parts.end());
    d->enums = Enumerations(*array, d->view->schema());
    return std::make_pair(d, rest);
  }
  // slice/<ranges>/...: the view restricted to a box.
  if (parts.size() >= used + 2 && parts[used] == "slice") {
    ASSIGN_OR_RETURN(scope, SliceScope(*scope, parts[used + 1]));
    used += 2;
  }
  // fragments/<name>/...: that fragment on its own.
  if (parts.size() >= used + 2 && parts[used] == "fragments") {
    const std::string& name = parts[used + 1];
    // By name through a map built once per view: listing fragments/ stats
    // every fragment, which must not cost O(fragments) each.
    std::shared_ptr<const FragmentMap> by_name = fragment_maps_.Get(scope->key);
    if (!by_name) {
      auto m = std::make_shared<FragmentMap>();
      for (const auto& f : scope->view->fragments()) (*m)[f->name().name] = f;
      by_name = m;
      fragment_maps_.Put(scope->key, by_name, 1);
    }
    auto found = by_name->find(name);
    if (found == by_name->end()) {
      return Error::NotFound(fmt::format("fragments/{}: no such fragment", name));
    }
    const std::shared_ptr<FragmentMetadata>& frag = found->second;
    auto fscope = std::make_shared<Scope>(*scope);
    fscope->fragment = frag;
    fscope->key = fmt::format("a{}/g{}/f/{}/", id_, gen, frag->dir());
    // Kept so that its cell index is built once, weighed by what a sparse
    // index holds per cell (a reference and the coordinates).
    fscope->view = caches_->fragment_views.Get(fscope->key);
    if (!fscope->view) {
      core::ViewInputs in;
      in.fragments = {frag};
      in.filter_timestamps = false;
      in.dedup = false;
      in.encrypted = array->encrypted();
      in.limits = array->limits();
      fscope->view = std::make_shared<const core::ArrayView>(frag->schema_ptr(), std::move(in),
                                                             frag->name().t2, array->tile_cache());
      uint64_t per_cell = sizeof(core::CellRef);
      for (const auto& d : frag->schema().dimensions) {
        per_cell += d.var() ? 24 : core::DatatypeSize(d.type) * d.cell_val_num;
      }
      uint64_t cells = frag->schema().dense() ? 0 : frag->cell_num();
      uint64_t weight =
          cells > (UINT64_MAX - 4096) / per_cell ? UINT64_MAX : 4096 + cells * per_cell;
      caches_->fragment_views.Put(fscope->key, fscope->view, weight);
    }
    fscope->mtime_ms = static_cast<int64_t>(frag->name().t2);
    // A fragment's own cells never change (it can only be vacuumed).
    fscope->immutable = true;
    fscope->snapshot = uint64_t{1} << 63 | (current.epoch + 1);
    fscope->root = false;
    scope = fscope;
    used += 2;
  }

  std::vector<std::string> rest(parts.begin() + static_cast<ptrdiff_t>(used), parts.end());
  scope->enums = Enumerations(*array, scope->view->schema());
  return std::make_pair(scope, rest);
}

Result<std::shared_ptr<ArrayTree::Scope>> ArrayTree::SliceScope(const Scope& parent,
                                                                const std::string& name) {
  auto scope = std::make_shared<Scope>(parent);
  scope->key = parent.key + "s/" + name + "/";
  scope->root = false;
  scope->sliced = true;
  scope->slice = name;
  std::shared_ptr<const core::ArrayView> view = slice_views_.Get(scope->key);
  if (!view) {
    ASSIGN_OR_RETURN(core::Subarray sub, ParseSliceName(name, parent.view->schema()));
    view = parent.view->WithSubarray(std::move(sub));
    slice_views_.Put(scope->key, view, 1);
  }
  scope->view = std::move(view);
  return scope;
}

Result<std::shared_ptr<const DiffFiles>> ArrayTree::Diff(const Scope& scope) {
  const std::string key = scope.key + "files";
  if (auto hit = diffs_.Get(key)) return hit;
  // One computation per diff: a second caller waits for the first. The
  // last one is kept whatever its size (a `cat` of its four files, or a
  // stat then a read, must not compute it again).
  std::lock_guard<std::mutex> lock(diff_mu_);
  if (auto hit = diffs_.Get(key)) return hit;
  if (last_diff_.first == key) return last_diff_.second;
  const auto [t1, t2] = *scope.diff;
  DiffSide from, to;
  ASSIGN_OR_RETURN(from.view, scope.array->ViewAt(static_cast<uint64_t>(t1)));
  from.enums = Enumerations(*scope.array, from.view->schema());
  from.instant = t1;
  to.view = scope.view;
  to.enums = scope.enums;
  to.instant = t2;
  ASSIGN_OR_RETURN(std::string log, RenderLog(*scope.array, UINT64_MAX));
  ASSIGN_OR_RETURN(DiffFiles files, ComputeDiff(from, to, log, options_.piece_cells));
  auto ptr = std::make_shared<const DiffFiles>(std::move(files));
  diffs_.Put(key, ptr, ptr->footprint());
  last_diff_ = {key, ptr};
  return std::shared_ptr<const DiffFiles>(ptr);
}

Result<std::optional<DiffCsvFile>> ArrayTree::DiffCsvFileOf(const Scope& scope,
                                                            const std::vector<std::string>& rest) {
  if (!scope.diff || rest.size() != 1) return std::optional<DiffCsvFile>();
  std::optional<core::DiffKind> kind = DiffCsvKind(rest[0]);
  if (!kind) return std::optional<DiffCsvFile>();
  ASSIGN_OR_RETURN(std::shared_ptr<const DiffFiles> d, Diff(scope));
  return std::optional<DiffCsvFile>(d->csv[static_cast<int>(*kind)]);
}

std::shared_ptr<const std::vector<core::Enumeration>> ArrayTree::Enumerations(
    const core::Array& array, const core::ArraySchema& schema) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = enums_.find(schema.name);
  if (it != enums_.end()) return it->second;
  // A schema whose enumerations cannot be read shows indexes instead of labels.
  auto loaded = core::LoadSchemaEnumerations(*storage_, schema, array.key(), array.limits());
  auto value = std::make_shared<const std::vector<core::Enumeration>>(
      loaded.ok() ? std::move(*loaded) : std::vector<core::Enumeration>{});
  enums_[schema.name] = value;
  return value;
}

namespace {

std::vector<std::string> FieldNames(const core::ArraySchema& s, bool dims) {
  std::vector<std::string> out;
  if (dims) {
    for (const auto& d : s.dimensions) out.push_back(d.name);
  } else {
    for (const auto& a : s.attributes) out.push_back(a.name);
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> ArrayTree::Names(const Scope& scope,
                                                  const std::vector<std::string>& rest) {
  const core::ArraySchema& schema = scope.view->schema();
  if (scope.diff) {
    if (!rest.empty()) return Error::NotFound(fmt::format("{}: no such directory", rest[0]));
    return std::vector<std::string>{"added.csv", "changed.csv", "removed.csv", "summary.json"};
  }
  if (rest.empty()) return ViewTopNames(scope);
  const std::string& top = rest[0];
  if (rest.size() == 1 && (top == kAttributes || top == kDimensions)) {
    bool dims = top == kDimensions;
    std::vector<std::string> out;
    for (const auto& name : FieldNames(schema, dims)) {
      core::Datatype type;
      uint32_t cvn;
      bool nullable = false;
      if (dims) {
        const auto& d = schema.dimensions[schema.DimensionIndex(name)];
        type = d.type;
        cvn = d.cell_val_num;
      } else {
        const auto& a = schema.attributes[schema.AttributeIndex(name)];
        type = a.type;
        cvn = a.cell_val_num;
        nullable = a.nullable;
      }
      for (ColumnFile f : ColumnFiles(type, cvn, nullable)) {
        out.push_back(EscapeName(name) + std::string(ColumnFileExtension(f)));
      }
    }
    return out;
  }
  if (rest.size() == 1 && top == "fragments" && !IsFragmentScope(scope)) {
    std::vector<std::string> out;
    for (const auto& f : scope.view->fragments()) out.push_back(f->name().name);
    return out;
  }
  if (rest.size() == 1 && top == "metadata" && !IsFragmentScope(scope)) {
    ASSIGN_OR_RETURN(auto md, core::LoadMetadata(scope.array->storage(), "__meta",
                                                 scope.view->timestamp(), scope.array->key()));
    std::vector<std::string> out;
    for (const auto& [k, v] : md) out.push_back(EscapeName(k));
    return out;
  }
  if (rest.size() == 1 && top == "diff" && scope.root) {
    return std::vector<std::string>{};  // any two instants resolve; none is listed
  }
  if (rest.size() == 1 && top == "slice" && !scope.sliced) {
    return std::vector<std::string>{};  // any well-formed name resolves; none is listed
  }
  if (rest.size() == 1 && top == "history" && scope.root) {
    ASSIGN_OR_RETURN(std::vector<uint64_t> instants, scope.array->Instants());
    std::vector<std::string> out;
    for (uint64_t t : instants) out.push_back(FormatIso(static_cast<int64_t>(t)));
    return out;
  }
  return Error::NotFound(fmt::format("{}: no such directory", fmt::join(rest, "/")));
}

Result<NodeAttr> ArrayTree::Attr(const Scope& scope, const std::vector<std::string>& rest) {
  NodeAttr a;
  a.mtime_ms = scope.mtime_ms;
  a.immutable = scope.immutable;
  if (scope.diff && !rest.empty()) {
    a.type = NodeType::kFile;
    ASSIGN_OR_RETURN(std::optional<DiffCsvFile> csv, DiffCsvFileOf(scope, rest));
    if (csv) {
      a.size = csv->layout->size();
      return a;
    }
    ASSIGN_OR_RETURN(std::shared_ptr<const std::string> content, Render(scope, rest));
    a.size = content->size();
    return a;
  }
  bool dir = rest.empty() ||
             (rest.size() == 1 && IsDirName(rest[0]) &&
              (!IsFragmentScope(scope) || rest[0] == kAttributes || rest[0] == kDimensions) &&
              (rest[0] != "history" || scope.root));
  if (dir) {
    a.type = NodeType::kDirectory;
    if (!rest.empty()) {
      // Existence check through the listing's parent.
      ASSIGN_OR_RETURN(auto top, Names(scope, {}));
      if (std::find(top.begin(), top.end(), rest[0]) == top.end()) {
        return Error::NotFound(fmt::format("{}: no such directory", rest[0]));
      }
    }
    return a;
  }
  a.type = NodeType::kFile;
  ASSIGN_OR_RETURN(std::optional<CellFile> cell_file, CellFileOf(scope, rest));
  if (cell_file) {
    ASSIGN_OR_RETURN(a.size, CellFileSize(scope, *cell_file));
    return a;
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const std::string> content, Render(scope, rest));
  a.size = content->size();
  return a;
}

Result<std::optional<ArrayTree::CellFile>> ArrayTree::CellFileOf(
    const Scope& scope, const std::vector<std::string>& rest) {
  using Kind = CellFile::Kind;
  CellFile f;
  if (scope.diff) return std::optional<CellFile>();
  if (rest.size() == 1 && rest[0] == "data.csv") return std::optional<CellFile>(f);
  if (rest.size() == 1 && rest[0] == "data.parquet") {
    f.kind = Kind::kParquet;
    return std::optional<CellFile>(f);
  }
  if (rest.size() != 2 || (rest[0] != kAttributes && rest[0] != kDimensions)) {
    return std::optional<CellFile>();
  }
  auto not_found = [&]() {
    return Error::NotFound(fmt::format("{}/{}: no such file", rest[0], rest[1]));
  };
  std::string_view stem;
  std::optional<ColumnFile> kind = ColumnFileFromName(rest[1], &stem);
  if (!kind) return not_found();
  const core::ArraySchema& schema = scope.view->schema();
  f.section = rest[0];
  f.field = UnescapeName(std::string(stem));
  bool nullable = false;
  if (rest[0] == kDimensions) {
    int d = schema.DimensionIndex(f.field);
    if (d < 0) return not_found();
    f.type = schema.dimensions[d].type;
    f.cell_val_num = schema.dimensions[d].cell_val_num;
  } else {
    int a = schema.AttributeIndex(f.field);
    if (a < 0) return not_found();
    f.type = schema.attributes[a].type;
    f.cell_val_num = schema.attributes[a].cell_val_num;
    nullable = schema.attributes[a].nullable;
  }
  auto files = ColumnFiles(f.type, f.cell_val_num, nullable);
  if (std::find(files.begin(), files.end(), *kind) == files.end()) return not_found();
  bool var = f.cell_val_num == core::kVarNum;
  switch (*kind) {
    case ColumnFile::kBin:
      f.kind = var ? Kind::kVarData : Kind::kFixed;
      break;
    case ColumnFile::kOffsets:
      f.kind = Kind::kVarOffsets;
      break;
    case ColumnFile::kValidity:
      f.kind = Kind::kValidity;
      break;
    case ColumnFile::kNpy:
      f.kind = Kind::kNpy;
      break;
    case ColumnFile::kTxt:
      f.kind = Kind::kTxt;
      break;
  }
  return std::optional<CellFile>(f);
}

std::string ArrayTree::CellFile::LayoutKey() const {
  return kind == Kind::kDataCsv ? std::string("layout/data.csv")
         : kind == Kind::kParquet
             ? std::string("layout/data.parquet")
             : fmt::format("layout/{}/{}/{}", section, static_cast<int>(kind), EscapeName(field));
}

namespace {

Result<std::string> NpyHeader(const core::ArrayView& view, core::Datatype type, uint32_t cvn) {
  ASSIGN_OR_RETURN(std::vector<uint64_t> shape, view.Shape());
  ASSIGN_OR_RETURN(NpyFile npy, MakeNpyFile(type, cvn, shape));
  return std::move(npy.header);
}

std::vector<std::string> CsvFields(const core::ArraySchema& schema) {
  std::vector<std::string> fields = FieldNames(schema, true);
  for (auto& a : FieldNames(schema, false)) fields.push_back(std::move(a));
  return fields;
}

std::shared_ptr<const CellRenderer> RendererFor(const ArrayTree::Scope& scope,
                                                const std::string& field, bool csv, bool var_data) {
  if (csv) return MakeCsvRenderer(scope.view, CsvFields(scope.view->schema()), scope.enums);
  if (var_data) return MakeVarDataRenderer(scope.view, field);
  return MakeCsvRenderer(scope.view, {field}, scope.enums);
}

}  // namespace

std::optional<std::string> ArrayTree::IndexKey(const Scope& scope) const {
  Result<std::string> versions = scope.array->FileVersions(*scope.view);
  if (!versions.ok()) return std::nullopt;
  // What decides the layouts besides the cells: how they are cut, and, for
  // a view indexed in windows, their size (the cache's: IndexWindowCells),
  // which the counts kept are of.
  Result<size_t> windows = scope.view->IndexWindows();
  const uint64_t window = windows.ok() && *windows > 0 ? scope.view->index_window_cells() : 0;
  return fmt::format("tiledbfs view {}\npiece {} batch {} window {}\n{}", kIndexedViewFormat,
                     options_.piece_cells, options_.layout_batch_cells, window,
                     core::IndexDigest(scope.view->Identity() + *versions));
}

std::shared_ptr<const StreamLayout> ArrayTree::PutLayouts(const Scope& scope, ViewLayouts all,
                                                          PendingLayout* pending,
                                                          const std::string& key) {
  using Kind = CellFile::Kind;
  std::shared_ptr<const StreamLayout> wanted;
  auto put = [&](const CellFile& file, StreamLayout layout) {
    auto ptr = std::make_shared<const StreamLayout>(std::move(layout));
    const std::string k = scope.key + file.LayoutKey();
    caches_->layouts.Put(k, ptr, ptr->footprint());
    if (pending != nullptr) pending->layouts[k] = ptr;
    if (k == key) wanted = ptr;
  };
  const core::ArraySchema& schema = scope.view->schema();
  auto put_field = [&](Kind kind, const std::string& field, StreamLayout layout) {
    CellFile file;
    file.kind = kind;
    file.section = schema.DimensionIndex(field) >= 0 ? kDimensions : kAttributes;
    file.field = field;
    put(file, std::move(layout));
  };
  for (auto& [field, layout] : all.txt) put_field(Kind::kTxt, field, std::move(layout));
  for (auto& [field, layout] : all.var_data) put_field(Kind::kVarData, field, std::move(layout));
  put(CellFile{}, std::move(all.csv));
  auto counts = std::make_shared<const ParquetCountsMap>(std::move(all.parquet));
  uint64_t bytes = sizeof(*counts);
  for (const auto& [field, c] : *counts) {
    bytes += field.size() + (c.valid.size() + c.bytes.size() + c.empty.size()) * 8;
  }
  caches_->parquet_counts.Put(scope.key + "layout/counts", counts, bytes);
  if (pending != nullptr) pending->counts = counts;
  return wanted;
}

std::shared_ptr<const StreamLayout> ArrayTree::FromIndex(const Scope& scope, PendingLayout* pending,
                                                         const std::string& key) {
  if (!options_.index || scope.diff) return nullptr;
  {
    // A view not in the index is not looked for again until ToIndex puts
    // it there; one that is, is read again once its layouts left the cache.
    std::lock_guard<std::mutex> lock(mu_);
    if (index_missing_.count(scope.key) != 0) return nullptr;
  }
  auto missing = [&]() -> std::shared_ptr<const StreamLayout> {
    std::lock_guard<std::mutex> lock(mu_);
    if (index_missing_.size() >= 4096) index_missing_.clear();
    index_missing_.insert(scope.key);
    return nullptr;
  };
  const std::optional<std::string> index_key = IndexKey(scope);
  if (!index_key) return missing();
  std::optional<std::string> got = options_.index->Get(*index_key);
  if (!got) return missing();
  // Checked whole by the store: what does not fit here is of a view cut
  // otherwise, and the pass replaces it.
  Result<IndexedView> saved = LoadIndexedView(*got);
  if (!saved.ok()) return missing();
  if (!saved->counts.empty() && !scope.view->RestoreCounts(saved->counts).ok()) return missing();
  // Cells found not to fit a layout (bytes changed where no listing shows
  // it) drop the entry, once: that read fails, and the next mount lays the
  // view out again.
  auto drop = [index = options_.index, index_key = *index_key,
               once = std::make_shared<std::atomic<bool>>(false)](const std::string& why) {
    if (!once->exchange(true)) index->Drop(index_key, why);
  };
  saved->layouts.csv.on_mismatch = drop;
  for (auto* files : {&saved->layouts.txt, &saved->layouts.var_data}) {
    for (auto& [field, layout] : *files) layout.on_mismatch = drop;
  }
  return PutLayouts(scope, std::move(saved->layouts), pending, key);
}

void ArrayTree::ToIndex(const Scope& scope, const ViewLayouts& layouts) {
  if (!options_.index || scope.diff) return;
  const std::optional<std::string> index_key = IndexKey(scope);
  if (!index_key) return;
  options_.index->Put(*index_key, SaveIndexedView(IndexedView{scope.view->SaveCounts(), layouts}));
  std::lock_guard<std::mutex> lock(mu_);
  index_missing_.erase(scope.key);
  index_counted_.insert(scope.key);  // counted by the pass
}

Result<std::shared_ptr<const StreamLayout>> ArrayTree::Layout(
    const Scope& scope, const CellFile& f, std::shared_ptr<const ParquetCountsMap>* counts) {
  using Kind = CellFile::Kind;
  std::string key = scope.key + f.LayoutKey();
  // The layout (and the counts asked for) as cached.
  auto cached = [&]() -> std::shared_ptr<const StreamLayout> {
    std::shared_ptr<const StreamLayout> hit = caches_->layouts.Get(key);
    if (hit && counts != nullptr) {
      *counts = caches_->parquet_counts.Get(scope.key + "layout/counts");
      if (!*counts) return nullptr;
    }
    return hit;
  };
  if (auto hit = cached()) return hit;
  if (f.kind != Kind::kVarData && f.kind != Kind::kTxt && f.kind != Kind::kDataCsv) {
    return Error::InvalidArgument(fmt::format("{}: no layout pass for this file", key));
  }
  // One pass per view at a time: callers that ask for a layout of a view
  // being laid out wait for it (a stat and an open racing, two readers,
  // data.csv and a .txt).
  const std::string pass_key = scope.key + "layout/text";
  std::shared_ptr<PendingLayout> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = pending_layouts_[pass_key];
    if (!slot) slot = std::make_shared<PendingLayout>();
    pending = slot;
  }
  std::lock_guard<std::mutex> pass_lock(pending->mu);
  auto passed = [&]() -> std::shared_ptr<const StreamLayout> {
    auto it = pending->layouts.find(key);
    if (it == pending->layouts.end() || (counts != nullptr && !pending->counts)) return nullptr;
    if (counts != nullptr) *counts = pending->counts;
    return it->second;
  };
  if (auto done = passed()) return done;
  auto computed = [&]() -> Result<std::shared_ptr<const StreamLayout>> {
    if (auto hit = cached()) return hit;
    FromIndex(scope, pending.get(), key);
    if (auto indexed = passed()) return indexed;
    ASSIGN_OR_RETURN(uint64_t cells, scope.view->CellCount());
    uint64_t piece = options_.piece_cells != 0 ? options_.piece_cells : DefaultPieceCells(cells);
    // Every text file of the view from the one pass: data.csv, each .txt,
    // each var-sized .bin (ls -l of the root and attributes/ pays once).
    const std::vector<std::string> fields = CsvFields(scope.view->schema());
    ++layout_passes_;
    ASSIGN_OR_RETURN(ViewLayouts all,
                     ComputeViewLayouts(*scope.view, fields, scope.enums.get(), cells, piece,
                                        options_.layout_batch_cells));
    ToIndex(scope, all);
    PutLayouts(scope, std::move(all), pending.get(), key);
    std::shared_ptr<const StreamLayout> wanted = passed();
    if (!wanted) {
      return Error::InvalidArgument(fmt::format("{}: not a text file of the view", key));
    }
    return wanted;
  }();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_layouts_.find(pass_key);
    if (it != pending_layouts_.end() && it->second == pending) pending_layouts_.erase(it);
  }
  return computed;
}

Result<std::shared_ptr<const ParquetSource>> ArrayTree::Parquet(const Scope& scope) {
  const std::string key = scope.key + "parquet";
  if (auto hit = caches_->parquet.Get(key)) return hit;
  const core::ArraySchema& schema = scope.view->schema();
  std::vector<ParquetField> fields;
  bool needs = false;
  for (const std::string& name : CsvFields(schema)) {
    ParquetField f;
    f.name = name;
    if (int d = schema.DimensionIndex(name); d >= 0) {
      f.type = schema.dimensions[d].type;
      f.cell_val_num = schema.dimensions[d].cell_val_num;
      f.dimension = true;
    } else {
      const core::Attribute& a = schema.attributes[schema.AttributeIndex(name)];
      f.type = a.type;
      f.cell_val_num = a.cell_val_num;
      f.nullable = a.nullable;
      if (scope.enums) f.enumeration = EnumerationFor(schema, *scope.enums, name);
    }
    needs = needs ||
            ParquetNeedsOf(f.type, f.cell_val_num, f.nullable, f.dimension, f.enumeration).any();
    fields.push_back(std::move(f));
  }
  ASSIGN_OR_RETURN(uint64_t cells, scope.view->CellCount());
  uint64_t piece = options_.piece_cells != 0 ? options_.piece_cells : DefaultPieceCells(cells);
  if (needs) {
    // The view's one pass (or its index entry) counts them, cut as the
    // text files are.
    std::shared_ptr<const ParquetCountsMap> counts;
    ASSIGN_OR_RETURN(std::shared_ptr<const StreamLayout> csv, Layout(scope, CellFile{}, &counts));
    piece = csv->piece_cells;
    for (ParquetField& f : fields) {
      if (auto it = counts->find(f.name); it != counts->end()) f.counts = it->second;
    }
  }
  Json view;
  // The array by its name, not where it is served from: the same view
  // read from a local copy or from S3 gives the same bytes.
  std::string root = scope.array->storage().root();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  view["array"] = std::filesystem::path(root).filename().string();
  view["instant_ms"] = scope.view->instant();
  view["instant"] = FormatIso(static_cast<int64_t>(scope.view->instant()));
  if (scope.fragment) view["fragment"] = scope.fragment->name().name;
  if (scope.sliced) view["slice"] = scope.slice;
  std::map<std::string, std::string> metadata = {
      {"tiledb.view", core::DumpJsonText(view, -1)},
      {"tiledb.schema", core::SchemaToJson(schema, scope.enums.get())}};
  // The first dimension's statistics: a dense view's coordinates cost no
  // tile; a sparse view's come from the pass, where it ran (read from the
  // cells, they would build every window of the view's cell order).
  const bool stats = !schema.dimensions.empty() && fields[0].dimension &&
                     (scope.view->dense() || !fields[0].counts.ends.empty());
  ASSIGN_OR_RETURN(ParquetPlan plan,
                   ParquetPlan::Make(std::move(fields), cells, piece, std::move(metadata), stats));
  std::optional<std::vector<ParquetPlan::MinMax>> first_dim = plan.StatsFromEnds(piece);
  auto source =
      std::make_shared<const ParquetSource>(scope.view, std::move(plan), std::move(first_dim));
  caches_->parquet.Put(key, source, source->footprint());
  return source;
}

namespace {

// `header` bytes then `cells` cells of `cell_size` bytes; kOutOfMemory past
// 2^64 (a hostile cell count or cell_val_num).
Result<uint64_t> SizeOfCells(uint64_t header, uint64_t cells, uint64_t cell_size) {
  uint64_t size;
  if (core::MulOverflow(cells, cell_size, &size) || core::AddOverflow(size, header, &size)) {
    return Error::OutOfMemory(
        fmt::format("{} cells of {} bytes do not fit in a file", cells, cell_size));
  }
  return size;
}

}  // namespace

Result<uint64_t> ArrayTree::CellFileSize(const Scope& scope, const CellFile& f) {
  using Kind = CellFile::Kind;
  // A sparse view's cells counted on an earlier mount: no window to build.
  // Once per view: its layouts come with them, and stay cached.
  if (!scope.view->dense() &&
      (f.kind == Kind::kFixed || f.kind == Kind::kNpy || f.kind == Kind::kParquet)) {
    bool first;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (index_counted_.size() >= 4096) index_counted_.clear();
      first = index_counted_.insert(scope.key).second;
    }
    if (first) FromIndex(scope, nullptr, "");
  }
  switch (f.kind) {
    case Kind::kParquet: {
      ASSIGN_OR_RETURN(std::shared_ptr<const ParquetSource> source, Parquet(scope));
      return source->plan().size();
    }
    case Kind::kFixed: {
      ASSIGN_OR_RETURN(uint64_t cells, scope.view->CellCount());
      return SizeOfCells(0, cells, f.cell_size());
    }
    case Kind::kNpy: {
      ASSIGN_OR_RETURN(uint64_t cells, scope.view->CellCount());
      ASSIGN_OR_RETURN(std::string header, NpyHeader(*scope.view, f.type, f.cell_val_num));
      return SizeOfCells(header.size(), cells, f.cell_size());
    }
    case Kind::kValidity:
      return scope.view->CellCount();
    case Kind::kVarOffsets: {
      ASSIGN_OR_RETURN(uint64_t cells, scope.view->CellCount());
      return SizeOfCells(8, cells, 8);
    }
    case Kind::kVarData:
    case Kind::kTxt:
    case Kind::kDataCsv: {
      ASSIGN_OR_RETURN(std::shared_ptr<const StreamLayout> layout, Layout(scope, f));
      return layout->size();
    }
  }
  return Error::InvalidArgument("unknown cell file");
}

Result<std::unique_ptr<OpenFile>> ArrayTree::OpenCellFile(const Scope& scope, const CellFile& f) {
  using Kind = CellFile::Kind;
  switch (f.kind) {
    case Kind::kParquet: {
      ASSIGN_OR_RETURN(std::shared_ptr<const ParquetSource> source, Parquet(scope));
      return MakeParquetFile(std::move(source));
    }
    case Kind::kFixed:
    case Kind::kNpy:
    case Kind::kValidity: {
      ASSIGN_OR_RETURN(uint64_t cells, scope.view->CellCount());
      std::string header;
      if (f.kind == Kind::kNpy) {
        ASSIGN_OR_RETURN(header, NpyHeader(*scope.view, f.type, f.cell_val_num));
      }
      bool validity = f.kind == Kind::kValidity;
      TRY(SizeOfCells(header.size(), cells, validity ? 1 : f.cell_size()));
      return MakeFieldRangeFile(scope.view, f.field,
                                validity ? FieldPart::kValidity : FieldPart::kData,
                                std::move(header), cells, validity ? 1 : f.cell_size());
    }
    case Kind::kVarOffsets: {
      CellFile data = f;
      data.kind = Kind::kVarData;
      ASSIGN_OR_RETURN(std::shared_ptr<const StreamLayout> data_layout, Layout(scope, data));
      auto layout = std::make_shared<const StreamLayout>(VarOffsetsLayout(*data_layout));
      return MakeStreamedFile(layout, MakeVarOffsetsRenderer(scope.view, f.field, data_layout));
    }
    case Kind::kVarData:
    case Kind::kTxt:
    case Kind::kDataCsv: {
      ASSIGN_OR_RETURN(std::shared_ptr<const StreamLayout> layout, Layout(scope, f));
      auto renderer =
          RendererFor(scope, f.field, f.kind == Kind::kDataCsv, f.kind == Kind::kVarData);
      return MakeStreamedFile(layout, std::move(renderer));
    }
  }
  return Error::InvalidArgument("unknown cell file");
}

Result<std::shared_ptr<const std::string>> ArrayTree::Render(const Scope& scope,
                                                             const std::vector<std::string>& rest) {
  std::string path = fmt::format("{}", fmt::join(rest, "/"));
  std::string key = scope.key + "file/" + path;
  if (auto c = caches_->files.Get(key)) return c;
  const core::ArraySchema& schema = scope.view->schema();
  const core::ArrayView& view = *scope.view;
  std::string out;
  auto not_found = [&]() { return Error::NotFound(fmt::format("{}: no such file", path)); };
  if (scope.diff) {
    if (rest.size() != 1) return not_found();
    ASSIGN_OR_RETURN(std::shared_ptr<const DiffFiles> d, Diff(scope));
    if (rest[0] == "summary.json") return d->summary_json;
    return not_found();  // the CSV files stream (DiffCsvFileOf)
  }

  if (rest.size() == 1 && rest[0] == "schema.json" && !IsFragmentScope(scope)) {
    out = core::SchemaToJson(schema, scope.enums.get());
  } else if (rest.size() == 1 && rest[0] == "schema.txt" && !IsFragmentScope(scope)) {
    out = core::SchemaToText(schema, scope.enums.get());
  } else if (!IsFragmentScope(scope) && (rest.size() == 2 && rest[0] == "metadata")) {
    ASSIGN_OR_RETURN(auto md, core::LoadMetadata(scope.array->storage(), "__meta", view.timestamp(),
                                                 scope.array->key()));
    auto it = md.find(UnescapeName(rest[1]));
    if (it == md.end()) return not_found();
    out = MetadataValueText(it->second);
  } else if (!IsFragmentScope(scope) && rest.size() == 1 && rest[0] == "metadata.json") {
    ASSIGN_OR_RETURN(auto md, core::LoadMetadata(scope.array->storage(), "__meta", view.timestamp(),
                                                 scope.array->key()));
    out = Dump(MetadataJson(md));
  } else if (!IsFragmentScope(scope) && rest.size() == 1 && rest[0] == "log.txt") {
    ASSIGN_OR_RETURN(out, RenderLog(*scope.array, view.timestamp()));
  } else if (IsFragmentScope(scope) && rest.size() == 1 &&
             (rest[0] == "fragment.json" || rest[0] == "fragment.txt")) {
    ASSIGN_OR_RETURN(Json j, FragmentJson(*scope.array, *scope.fragment));
    out = rest[0] == "fragment.json" ? Dump(j) : FragmentText(j);
  } else if (IsFragmentScope(scope) && rest.size() == 1 && rest[0] == "tiles.csv") {
    ASSIGN_OR_RETURN(out, RenderTilesCsv(*scope.fragment));
  } else {
    return not_found();
  }
  auto ptr = std::make_shared<const std::string>(std::move(out));
  caches_->files.Put(key, ptr, ptr->size());
  return std::shared_ptr<const std::string>(ptr);
}

Result<NodeAttr> ArrayTree::GetAttr(const std::string& path) {
  std::vector<std::string> parts = SplitPath(path);
  if (parts.size() == 1 && parts[0] == "history") {
    ASSIGN_OR_RETURN(Current current, CurrentArray(false));
    NodeAttr a;
    a.type = NodeType::kDirectory;
    a.mtime_ms = static_cast<int64_t>(current.latest);
    return a;
  }
  auto attr = [&]() -> Result<NodeAttr> {
    ASSIGN_OR_RETURN(auto resolved, Resolve(path, false));
    return Attr(*resolved.first, resolved.second);
  };
  ASSIGN_OR_RETURN(Current used, CurrentArray(false));
  Result<NodeAttr> a = attr();
  if (a.ok()) return a;
  // A failure on the array as last opened may come from files a vacuum
  // removed since (their fragments consolidated meanwhile: "no such file"):
  // look at the array's folders again before answering an error, the more
  // so "no such name", which the kernel keeps as a negative entry
  // (reliability_writers once saw ENOENT for data.csv for a second). Once
  // more only if they changed: a damaged file is not measured twice.
  ASSIGN_OR_RETURN(Current fresh, CurrentArray(true));
  return fresh.generation != used.generation ? attr() : a;
}

Result<std::vector<DirEntryAttr>> ArrayTree::List(const std::string& path) {
  std::vector<std::string> parts = SplitPath(path);
  std::shared_ptr<Scope> scope;
  std::vector<std::string> rest;
  if (parts.size() == 1 && parts[0] == "history") {
    ASSIGN_OR_RETURN(auto resolved, Resolve("", true));
    scope = resolved.first;
    rest = {"history"};
  } else {
    // A folder of a view that never changes (history/<T>/... up to the
    // newest instant, fragments/<name>/...) is listed without rechecking the
    // array's folders first: nothing a commit adds can show in it, and a
    // consolidation or vacuum that rewrites it is the watcher's to report
    // (as for lookups). `find` lists thousands of these.
    const bool maybe_fixed =
        parts.size() >= 2 && (parts[0] == "history" || parts[0] == "fragments");
    auto found = Resolve(path, !maybe_fixed);
    // Not found, or not fixed after all (a later instant): as any folder.
    if (maybe_fixed && (!found.ok() || !found->first->immutable)) found = Resolve(path, true);
    ASSIGN_OR_RETURN(auto resolved, std::move(found));
    scope = resolved.first;
    rest = resolved.second;
  }
  ASSIGN_OR_RETURN(NodeAttr self, Attr(*scope, rest));
  if (self.type != NodeType::kDirectory) {
    return Error::InvalidArgument(fmt::format("{}: not a directory", path));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, Names(*scope, rest));
  // Children of fragments/ and history/ are folders, and so are the named
  // folders of a view's top; everything else listed is a file, whose size is
  // left for GetAttr: a listing never renders or decodes, and one damaged
  // file does not make its folder unlistable.
  std::vector<DirEntryAttr> out;
  if (rest.size() == 1 && rest[0] == "history") {
    // What GetAttr gives each, without building views (and without reading
    // footers a vacuum may be deleting meanwhile).
    for (const auto& n : names) {
      std::optional<int64_t> t = ParseInstant(n);
      if (!t || *t < 0) continue;
      NodeAttr a;
      a.type = NodeType::kDirectory;
      a.mtime_ms = static_cast<int64_t>(scope->array->InstantAt(static_cast<uint64_t>(*t)));
      a.immutable = true;  // every listed instant is up to the newest one
      out.push_back({n, a});
    }
    return out;
  }
  if (rest.size() == 1 && rest[0] == "fragments") {
    for (const auto& f : scope->view->fragments()) {
      NodeAttr a;
      a.type = NodeType::kDirectory;
      a.mtime_ms = static_cast<int64_t>(f->name().t2);
      a.immutable = true;
      out.push_back({f->name().name, a});
    }
    return out;
  }
  out.reserve(names.size());
  // A child of this scope: its times and whether it can change.
  auto child = [&](NodeType type) {
    NodeAttr a;
    a.type = type;
    a.mtime_ms = scope->mtime_ms;
    a.immutable = scope->immutable;
    return a;
  };
  for (const auto& n : names) {
    if (rest.empty() && IsDirName(n)) {
      // The folders of a view's top are in this scope (history/ has its
      // own attributes): no second resolve of the path for each. `names`
      // is the top's listing, so each is there: what Attr(*scope, {n})
      // gives without looking again.
      if (n == "history") {
        ASSIGN_OR_RETURN(NodeAttr a, GetAttr(path.empty() ? n : path + "/" + n));
        out.push_back({n, a});
        continue;
      }
      out.push_back({n, child(NodeType::kDirectory)});
      continue;
    }
    NodeAttr a = child(NodeType::kFile);
    a.sized = false;
    out.push_back({n, a});
  }
  return out;
}

Result<std::unique_ptr<OpenFile>> ArrayTree::Open(const std::string& path) {
  ASSIGN_OR_RETURN(auto resolved, Resolve(path, true));
  ASSIGN_OR_RETURN(NodeAttr a, Attr(*resolved.first, resolved.second));
  if (a.type != NodeType::kFile)
    return Error::InvalidArgument(fmt::format("{}: is a directory", path));
  ASSIGN_OR_RETURN(std::optional<CellFile> cell_file, CellFileOf(*resolved.first, resolved.second));
  ASSIGN_OR_RETURN(std::optional<DiffCsvFile> diff_csv,
                   DiffCsvFileOf(*resolved.first, resolved.second));
  std::unique_ptr<OpenFile> file;
  if (cell_file) {
    ASSIGN_OR_RETURN(file, OpenCellFile(*resolved.first, *cell_file));
  } else if (diff_csv) {
    file = MakeStreamedFile(diff_csv->layout, diff_csv->renderer);
  } else {
    ASSIGN_OR_RETURN(auto content, Render(*resolved.first, resolved.second));
    file.reset(new StringFile(content));
  }
  file->snapshot_id = resolved.first->snapshot;
  file->mtime_ms = a.mtime_ms;
  return file;
}

}  // namespace tiledbfs::fusefs
