// ArrayTree's side of the persistent index (core/index/index_store.h): what
// it keeps of a view (its windows' counts and its text files' layouts),
// and, for an array that grew by appends, the view it last indexed, whose
// layouts a later view extends by measuring only the cells that follow
// them (ExtendViewLayouts).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <nlohmann/json.hpp>

#include "core/read/coords.h"
#include "fusefs/model/array_tree.h"

namespace tiledbfs::fusefs {

using Json = nlohmann::json;

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

std::optional<std::string> ArrayTree::DiffIndexKey(const Scope& scope,
                                                   const core::ArrayView& from) const {
  Result<std::string> from_files = scope.array->FileVersions(from);
  Result<std::string> to_files = scope.array->FileVersions(*scope.view);
  if (!from_files.ok() || !to_files.ok() || !scope.diff) return std::nullopt;
  return fmt::format("tiledbfs diff {}\n{}..{} piece {}\n{}\n{}", kIndexedViewFormat,
                     scope.diff->first, scope.diff->second, options_.piece_cells,
                     core::IndexDigest(from.Identity() + *from_files),
                     core::IndexDigest(scope.view->Identity() + *to_files));
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
  if (!saved->counts.empty()) {
    // The counts must give the cells the layouts were measured over.
    if (!scope.view->RestoreCounts(saved->counts).ok()) return missing();
    Result<uint64_t> cells = scope.view->CellCount();
    if (!cells.ok() || *cells != saved->layouts.csv.cells) return missing();
    NotePartlyCounted(scope, *index_key, std::move(saved->counts));
  }
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
  std::string counts = scope.view->SaveCounts();
  options_.index->Put(*index_key, SaveIndexedView(IndexedView{counts, layouts}));
  NotePartlyCounted(scope, *index_key, std::move(counts));
  ToBase(scope, *index_key, layouts.csv.cells);
  std::lock_guard<std::mutex> lock(mu_);
  index_missing_.erase(scope.key);
  index_counted_.insert(scope.key);  // counted by the pass
}

void ArrayTree::NotePartlyCounted(const Scope& scope, const std::string& index_key,
                                  std::string counts) {
  if (scope.view->Counted()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (partly_counted_.size() >= 64) return;  // a few appended views per mount
  partly_counted_[index_key] = PartlyCounted{scope.view, std::move(counts)};
}

ArrayTree::~ArrayTree() {
  if (!options_.index) return;
  for (auto& [key, partly] : partly_counted_) {
    std::shared_ptr<const core::ArrayView> view = partly.view.lock();
    if (!view) continue;
    std::string counts = view->SaveCounts();
    if (counts == partly.counts) continue;
    // The entry as written, if it still is: its layouts with more counts.
    std::optional<std::string> entry = options_.index->Get(key);
    if (!entry) continue;
    Result<IndexedView> saved = LoadIndexedView(*entry);
    if (!saved.ok() || saved->counts != partly.counts) continue;
    saved->counts = std::move(counts);
    options_.index->Put(key, SaveIndexedView(*saved));
  }
}

namespace {

// The base of an array: one per array (its root view's last index entry).
std::string BaseKey(const ArrayTree::Scope& scope) {
  return fmt::format("tiledbfs base {}\n{}", kIndexedViewFormat, scope.array->storage().root());
}

// Whether a view may be a base or be extended from one: the whole view of
// a sparse array at the root, no slice, no delete or update conditions.
bool Appendable(const ArrayTree::Scope& scope) {
  return scope.kind == kRootView && scope.slice.empty() && !scope.fragment && !scope.diff &&
         !scope.view->dense() && scope.view->DeleteMarkers().empty() &&
         scope.view->subarray().empty();
}

// Each fragment of the view as the index tells them apart: its Identity
// line and the digest of its files. Empty where a file cannot be listed.
std::vector<std::string> FragmentTokens(const ArrayTree::Scope& scope) {
  std::vector<std::string> out;
  for (const auto& f : scope.view->fragments()) {
    Result<std::string> version = scope.array->FragmentVersion(*f);
    if (!version.ok()) return {};
    out.push_back(core::FragmentIdentity(*f) + *version);
  }
  return out;
}

// The schema's line and files, and how the view's files are cut: what a
// base and the view extending it must share.
std::optional<std::string> SchemaTokens(const ArrayTree::Scope& scope, uint64_t batch) {
  const core::ArraySchema& schema = scope.view->schema();
  Result<std::string> files = scope.array->SchemaVersions(schema);
  if (!files.ok()) return std::nullopt;
  return fmt::format("schema {} {}\nbatch {}\n{}", schema.name, schema.version, batch, *files);
}

// A first dimension the view's order sorts by as integers.
bool IntegerFirstDimension(const core::ArraySchema& schema) {
  if (schema.dimensions.empty()) return false;
  const core::Dimension& d = schema.dimensions[0];
  return d.cell_val_num == 1 &&
         (core::IsInteger(d.type) || core::IsDatetime(d.type) || core::IsTime(d.type));
}

}  // namespace

void ArrayTree::ToBase(const Scope& scope, const std::string& index_key, uint64_t cells) {
  if (!Appendable(scope) || !IntegerFirstDimension(scope.view->schema())) return;
  const std::optional<std::string> schema = SchemaTokens(scope, options_.layout_batch_cells);
  const std::vector<std::string> fragments = FragmentTokens(scope);
  if (!schema || fragments.empty()) return;
  Json base;
  base["view"] = index_key;
  base["schema"] = *schema;
  base["timestamp"] = scope.view->timestamp();
  base["cells"] = cells;
  base["fragments"] = fragments;
  options_.index->Put(BaseKey(scope), base.dump());
}

Result<std::optional<ViewLayouts>> ArrayTree::ExtendIndexed(const Scope& scope,
                                                            const std::vector<std::string>& fields,
                                                            uint64_t cells, uint64_t piece) {
  const std::optional<ViewLayouts> none;
  const core::ArraySchema& schema = scope.view->schema();
  if (!options_.index || !Appendable(scope) || !IntegerFirstDimension(schema)) return none;
  std::optional<std::string> saved = options_.index->Get(BaseKey(scope));
  if (!saved) return none;
  Json base = Json::parse(*saved, nullptr, false);
  const std::optional<std::string> schema_tokens = SchemaTokens(scope, options_.layout_batch_cells);
  if (base.is_discarded() || !base.is_object() || !schema_tokens ||
      base.value("schema", "") != *schema_tokens || !base["fragments"].is_array() ||
      !base["timestamp"].is_number_unsigned() || !base["cells"].is_number_unsigned() ||
      !base["view"].is_string()) {
    return none;
  }
  // The base's fragments must all be in the view, each wholly visible in
  // both, and every other fragment must lie past their last row: the view's
  // cells are then the base's, in the same order, and after them the
  // others' (the view's order is row-major by coordinates).
  const std::vector<std::string> tokens = FragmentTokens(scope);
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < tokens.size(); ++i) at[tokens[i]] = i;
  const auto& fragments = scope.view->fragments();
  std::vector<bool> in_base(fragments.size(), false);
  const uint64_t base_time = base["timestamp"].get<uint64_t>();
  const core::Datatype t = schema.dimensions[0].type;
  std::optional<__int128> last_row;
  bool first_in_order = true;  // the base's fragments are the view's first, in order
  size_t position = 0;
  for (const Json& token : base["fragments"]) {
    if (!token.is_string()) return none;
    auto it = at.find(token.get<std::string>());
    if (it == at.end()) return none;
    first_in_order = first_in_order && it->second == position++;
    const core::FragmentMetadata& f = *fragments[it->second];
    const core::FragmentFooter& ft = f.footer();
    if (f.name().t2 > base_time || f.name().t2 > scope.view->timestamp()) return none;
    in_base[it->second] = true;
    if (ft.null_non_empty_domain || ft.non_empty_domain.empty()) continue;
    const __int128 hi = core::ToInt128(t, ft.non_empty_domain[0].hi);
    last_row = last_row ? std::max(*last_row, hi) : hi;
  }
  if (!last_row) return none;
  size_t appended = 0;
  for (size_t i = 0; i < fragments.size(); ++i) {
    if (in_base[i]) continue;
    const core::FragmentFooter& ft = fragments[i]->footer();
    if (fragments[i]->dense() || ft.null_non_empty_domain || ft.non_empty_domain.empty() ||
        core::ToInt128(t, ft.non_empty_domain[0].lo) <= *last_row) {
      return none;
    }
    ++appended;
  }
  if (appended == 0) return none;
  std::optional<std::string> entry = options_.index->Get(base["view"].get<std::string>());
  if (!entry) return none;
  Result<IndexedView> indexed = LoadIndexedView(*entry);
  if (!indexed.ok() || indexed->layouts.csv.piece_cells != piece ||
      indexed->layouts.csv.cells != base["cells"].get<uint64_t>() ||
      indexed->layouts.csv.cells >= cells) {
    return none;
  }
  // The cells after the base's: the view sliced past its last row.
  core::Subarray tail_box(schema.dimensions.size());
  core::Range rows = schema.dimensions[0].domain;
  core::FromInt128(t, *last_row + 1, rows.lo.data());
  tail_box[0] = rows;
  std::shared_ptr<const core::ArrayView> tail = scope.view->WithSubarray(tail_box);
  ASSIGN_OR_RETURN(uint64_t tail_cells, tail->CellCount());
  if (indexed->layouts.csv.cells + tail_cells != cells) return none;
  Result<ViewLayouts> extended = ExtendViewLayouts(
      indexed->layouts, *tail, fields, scope.enums.get(), tail_cells, options_.layout_batch_cells);
  if (!extended.ok()) {
    // A base laid out otherwise: the pass lays the view out whole.
    if (extended.error().code() == core::ErrorCode::kInvalidArgument) return none;
    return extended.error();
  }
  ++layout_extensions_;
  // The base's windows below the new rows hold the same cells: counted
  // already (their tiles numbered alike when its fragments come first).
  // Counts that do not read back cost only speed: the windows are counted.
  if (first_in_order) {
    Result<size_t> taken = scope.view->TakeCountsBefore(indexed->counts, rows.lo);
    if (taken.ok()) windows_taken_ += *taken;
  }
  return std::optional<ViewLayouts>(std::move(extended).value());
}

}  // namespace tiledbfs::fusefs
