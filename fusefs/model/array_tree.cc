#include "fusefs/model/array_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include "fusefs/model/diff.h"
#include "fusefs/model/documents.h"
#include "fusefs/model/instant.h"
#include "fusefs/model/names.h"
#include "fusefs/model/slice_name.h"
#include "fusefs/model/string_file.h"
#include "fusefs/render/column_files.h"

namespace tiledbfs::fusefs {

using core::Error;
using core::FragmentMetadata;

Result<std::unique_ptr<ArrayTree>> ArrayTree::Open(std::shared_ptr<const core::Storage> storage,
                                                   const TreeOptions& options,
                                                   std::shared_ptr<TreeCaches> caches) {
  static std::atomic<uint64_t> next_id{1};
  std::unique_ptr<ArrayTree> t(new ArrayTree());
  t->id_ = next_id++;
  t->storage_ = std::move(storage);
  t->options_ = options;
  t->caches_ = std::move(caches);
  ASSIGN_OR_RETURN(t->array_, core::Array::Open(t->storage_, options.key, options.limits));
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
    ASSIGN_OR_RETURN(std::shared_ptr<core::Array> fresh,
                     core::Array::Open(storage_, options_.key, options_.limits));
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

std::shared_ptr<ArrayTree::Scope> ArrayTree::ViewScope(const Current& current, ViewKind kind,
                                                       uint64_t at) {
  auto scope = std::make_shared<Scope>();
  scope->kind = kind;
  scope->array = current.array;
  scope->at = at;
  scope->latest = current.latest;
  scope->key = fmt::format("a{}/g{}/t{}/", id_, current.generation, at);
  // A view up to the newest instant changes only when a past view is
  // rewritten (epoch); a later one also with the next commit (generation).
  // The top bit keeps the two kinds of snapshot ids apart.
  scope->immutable = at <= current.latest;
  scope->snapshot =
      scope->immutable ? (uint64_t{1} << 63 | (current.epoch + 1)) : current.generation + 1;
  return scope;
}

core::Status ArrayTree::LoadView(Scope& scope) {
  if (scope.view) return core::Ok();
  ASSIGN_OR_RETURN(scope.view, scope.array->ViewAt(scope.at));
  scope.mtime_ms = static_cast<int64_t>(scope.view->instant());
  return core::Ok();
}

Result<std::pair<std::shared_ptr<ArrayTree::Scope>, std::vector<std::string>>> ArrayTree::Resolve(
    const std::string& path, bool recheck) {
  std::vector<std::string> parts = SplitPath(path);
  ASSIGN_OR_RETURN(Current current, CurrentArray(recheck));
  const uint64_t at =
      options_.timestamp_ms ? static_cast<uint64_t>(*options_.timestamp_ms) : UINT64_MAX;
  std::shared_ptr<Scope> scope = ViewScope(current, kRootView, at);
  // Into each folder of views the path names; the root's own view is built
  // only if needed (history/<T>/ is a view of the array, not of the root).
  size_t used = 0;
  while (parts.size() >= used + 2) {
    const NamespaceEntry* e = FindEntry(scope->kind, parts[used]);
    if (e == nullptr || e->type != NodeType::kDirectory || !HoldsViews(e->dir)) break;
    ASSIGN_OR_RETURN(scope, Enter(e->dir, *scope, parts[used + 1], current));
    used += 2;
  }
  TRY(LoadView(*scope));
  std::vector<std::string> rest(parts.begin() + static_cast<ptrdiff_t>(used), parts.end());
  scope->enums = Enumerations(*scope->array, scope->view->schema());
  return std::make_pair(scope, rest);
}

Result<std::shared_ptr<ArrayTree::Scope>> ArrayTree::Enter(DirKind dir, Scope& parent,
                                                           const std::string& name,
                                                           const Current& current) {
  switch (dir) {
    case DirKind::kHistory: {
      std::optional<int64_t> at = ParseInstant(name);
      if (!at || *at < 0) return Error::NotFound(fmt::format("history/{}: not an instant", name));
      return ViewScope(current, kHistoryView, static_cast<uint64_t>(*at));
    }
    case DirKind::kDiffs: {
      std::optional<std::pair<int64_t, int64_t>> span = ParseDiffName(name);
      if (!span) return Error::NotFound(fmt::format("diff/{}: not two instants T1..T2", name));
      // Fixed once both instants are; shown as of the later one.
      const auto last = static_cast<uint64_t>(std::max(span->first, span->second));
      std::shared_ptr<Scope> d = ViewScope(current, kDiffView, last);
      d->at = static_cast<uint64_t>(span->second);
      d->diff = span;
      d->key = fmt::format("a{}/g{}/d{}..{}/", id_, current.generation, span->first, span->second);
      TRY(LoadView(*d));
      d->mtime_ms = static_cast<int64_t>(current.array->InstantAt(last));
      return d;
    }
    case DirKind::kSlices:
      TRY(LoadView(parent));
      return SliceScope(parent, name);
    case DirKind::kFragments:
      TRY(LoadView(parent));
      return FragmentScope(parent, name, current);
    case DirKind::kAttributes:
    case DirKind::kDimensions:
    case DirKind::kMetadata:
      break;
  }
  return Error::NotFound(fmt::format("{}: not a view", name));
}

Result<std::shared_ptr<ArrayTree::Scope>> ArrayTree::FragmentScope(const Scope& parent,
                                                                   const std::string& name,
                                                                   const Current& current) {
  // By name through a map built once per view: listing fragments/ stats
  // every fragment, which must not cost O(fragments) each.
  std::shared_ptr<const FragmentMap> by_name = fragment_maps_.Get(parent.key);
  if (!by_name) {
    auto m = std::make_shared<FragmentMap>();
    for (const auto& f : parent.view->fragments()) (*m)[f->name().name] = f;
    by_name = m;
    fragment_maps_.Put(parent.key, by_name, 1);
  }
  auto found = by_name->find(name);
  if (found == by_name->end()) {
    return Error::NotFound(fmt::format("fragments/{}: no such fragment", name));
  }
  const std::shared_ptr<FragmentMetadata>& frag = found->second;
  const core::Array& array = *parent.array;
  auto fscope = std::make_shared<Scope>(parent);
  fscope->kind = kFragmentView;
  fscope->fragment = frag;
  fscope->key = fmt::format("a{}/g{}/f/{}/", id_, current.generation, frag->dir());
  // Kept so that its cell index is built once, weighed by what a sparse
  // index holds per cell (a reference and the coordinates).
  fscope->view = caches_->fragment_views.Get(fscope->key);
  if (!fscope->view) {
    core::ViewInputs in;
    in.fragments = {frag};
    in.filter_timestamps = false;
    in.dedup = false;
    in.encrypted = array.encrypted();
    in.limits = array.limits();
    fscope->view = std::make_shared<const core::ArrayView>(frag->schema_ptr(), std::move(in),
                                                           frag->name().t2, array.tile_cache());
    uint64_t per_cell = sizeof(core::CellRef);
    for (const auto& d : frag->schema().dimensions) {
      per_cell += d.var() ? 24 : core::DatatypeSize(d.type) * d.cell_val_num;
    }
    uint64_t cells = frag->schema().dense() ? 0 : frag->cell_num();
    uint64_t weight = cells > (UINT64_MAX - 4096) / per_cell ? UINT64_MAX : 4096 + cells * per_cell;
    caches_->fragment_views.Put(fscope->key, fscope->view, weight);
  }
  fscope->mtime_ms = static_cast<int64_t>(frag->name().t2);
  // A fragment's own cells never change (it can only be vacuumed).
  fscope->immutable = true;
  fscope->snapshot = uint64_t{1} << 63 | (current.epoch + 1);
  return fscope;
}

Result<std::shared_ptr<ArrayTree::Scope>> ArrayTree::SliceScope(const Scope& parent,
                                                                const std::string& name) {
  auto scope = std::make_shared<Scope>(parent);
  scope->kind = kSliceView;
  scope->key = parent.key + "s/" + name + "/";
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
  // The persistent index keeps what the pass finds: a remount's diff of the
  // same views makes none.
  std::optional<std::string> index_key, saved;
  if (options_.index) index_key = DiffIndexKey(scope, *from.view);
  if (index_key) saved = options_.index->Get(*index_key);
  DiffIndexed indexed;
  std::string to_save;
  indexed.to_save = &to_save;
  if (saved) {
    indexed.saved = *saved;
    indexed.on_mismatch = [index = options_.index, key = *index_key,
                           once =
                               std::make_shared<std::atomic<bool>>(false)](const std::string& why) {
      if (!once->exchange(true)) index->Drop(key, why);
    };
  }
  Result<DiffFiles> computed = ComputeDiff(from, to, log, options_.piece_cells, &indexed);
  if (!computed.ok()) {
    // Counts taken from the entry that the cells do not hold: dropped, so
    // that the next look makes the pass.
    if (saved && computed.error().code() == core::ErrorCode::kCorrupt) {
      options_.index->Drop(*index_key, computed.error().message());
    }
    return computed.error();
  }
  if (indexed.taken) ++diffs_indexed_;
  if (index_key && !to_save.empty()) options_.index->Put(*index_key, to_save);
  auto ptr = std::make_shared<const DiffFiles>(std::move(computed).value());
  diffs_.Put(key, ptr, ptr->footprint());
  last_diff_ = {key, ptr};
  return std::shared_ptr<const DiffFiles>(ptr);
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

// A folder of a view's top, as stated and listed.
NodeAttr DirAttr(const Scope& scope, const NamespaceEntry& dir) {
  NodeAttr a;
  a.type = NodeType::kDirectory;
  // history/ gains an entry with every commit: as of the newest instant.
  const bool history = dir.dir == DirKind::kHistory;
  a.mtime_ms = history ? static_cast<int64_t>(scope.latest) : scope.mtime_ms;
  a.immutable = !history && scope.immutable;
  return a;
}

}  // namespace

Result<NodeAttr> ArrayTree::Attr(const Scope& scope, const std::vector<std::string>& rest) {
  NodeAttr a;
  a.mtime_ms = scope.mtime_ms;
  a.immutable = scope.immutable;
  if (rest.empty()) {
    a.type = NodeType::kDirectory;
    return a;
  }
  if (rest.size() == 1) {
    const NamespaceEntry* e = FindEntry(scope.kind, rest[0]);
    if (e != nullptr && e->type == NodeType::kDirectory) return DirAttr(scope, *e);
  }
  ASSIGN_OR_RETURN(FileRef file, FileAt(scope, rest));
  a.type = NodeType::kFile;
  if (file.cells) {
    ASSIGN_OR_RETURN(a.size, CellFileSize(scope, *file.cells));
  } else if (file.diff_csv) {
    a.size = file.diff_csv->layout->size();
  } else {
    a.size = file.document->size();
  }
  return a;
}

Result<ArrayTree::FileRef> ArrayTree::FileAt(const Scope& scope,
                                             const std::vector<std::string>& rest) {
  const std::string path = fmt::format("{}", fmt::join(rest, "/"));
  auto not_found = [&]() { return Error::NotFound(fmt::format("{}: no such file", path)); };
  // A file of the top, or one in a folder of the top.
  const NamespaceEntry* e =
      rest.empty() || rest.size() > 2 ? nullptr : FindEntry(scope.kind, rest[0]);
  if (e == nullptr || (e->type == NodeType::kFile) != (rest.size() == 1)) return not_found();
  FileRef file;
  // A small document, rendered whole and cached.
  auto document = [&](const auto& render) -> Result<FileRef> {
    const std::string key = scope.key + "file/" + path;
    file.document = caches_->files.Get(key);
    if (!file.document) {
      ASSIGN_OR_RETURN(std::string out, render());
      auto ptr = std::make_shared<const std::string>(std::move(out));
      caches_->files.Put(key, ptr, ptr->size());
      file.document = std::move(ptr);
    }
    return file;
  };
  if (e->type == NodeType::kDirectory) {
    switch (e->dir) {
      case DirKind::kAttributes:
      case DirKind::kDimensions: {
        ASSIGN_OR_RETURN(file.cells, FieldFile(scope, e->dir == DirKind::kDimensions, rest[1]));
        return file;
      }
      case DirKind::kMetadata:
        return document([&] { return RenderMetadataValue(scope, UnescapeName(rest[1])); });
      case DirKind::kFragments:
      case DirKind::kHistory:
      case DirKind::kSlices:
      case DirKind::kDiffs:
        break;  // their entries are views, which Resolve went into
    }
    return not_found();
  }
  switch (e->file) {
    case FileKind::kDocument:
      return document([&] { return e->render(scope); });
    case FileKind::kCells: {
      CellFile cells;
      cells.kind = e->cells;
      file.cells = std::move(cells);
      return file;
    }
    case FileKind::kDiffSummary: {
      ASSIGN_OR_RETURN(std::shared_ptr<const DiffFiles> d, Diff(scope));
      file.document = d->summary_json;
      return file;
    }
    case FileKind::kDiffCsv: {
      ASSIGN_OR_RETURN(std::shared_ptr<const DiffFiles> d, Diff(scope));
      file.diff_csv = d->csv[static_cast<int>(e->diff)];
      return file;
    }
  }
  return not_found();
}

Result<std::vector<DirEntryAttr>> ArrayTree::ListDir(const Scope& scope,
                                                     const NamespaceEntry& dir) {
  std::vector<DirEntryAttr> out;
  // A file's size is left for GetAttr: a listing never renders or decodes,
  // and one damaged file does not make its folder unlistable.
  auto file = [&](std::string name) {
    NodeAttr a;
    a.mtime_ms = scope.mtime_ms;
    a.immutable = scope.immutable;
    a.sized = false;
    out.push_back({std::move(name), a});
  };
  // A view that never changes, stated without building it (nor reading
  // footers a vacuum may be deleting meanwhile).
  auto view = [&](std::string name, uint64_t mtime_ms) {
    NodeAttr a;
    a.type = NodeType::kDirectory;
    a.mtime_ms = static_cast<int64_t>(mtime_ms);
    a.immutable = true;
    out.push_back({std::move(name), a});
  };
  const core::ArraySchema& schema = scope.view->schema();
  switch (dir.dir) {
    case DirKind::kAttributes:
      for (const auto& a : schema.attributes) {
        for (ColumnFile f : ColumnFiles(a.type, a.cell_val_num, a.nullable)) {
          file(EscapeName(a.name) + std::string(ColumnFileExtension(f)));
        }
      }
      break;
    case DirKind::kDimensions:
      for (const auto& d : schema.dimensions) {
        for (ColumnFile f : ColumnFiles(d.type, d.cell_val_num, false)) {
          file(EscapeName(d.name) + std::string(ColumnFileExtension(f)));
        }
      }
      break;
    case DirKind::kMetadata: {
      ASSIGN_OR_RETURN(auto md, ViewMetadata(scope));
      for (const auto& [k, v] : md) file(EscapeName(k));
      break;
    }
    case DirKind::kFragments:
      for (const auto& f : scope.view->fragments()) view(f->name().name, f->name().t2);
      break;
    case DirKind::kHistory: {
      ASSIGN_OR_RETURN(std::vector<uint64_t> instants, scope.array->Instants());
      for (uint64_t t : instants) {
        std::string name = FormatIso(static_cast<int64_t>(t));
        std::optional<int64_t> back = ParseInstant(name);
        if (!back || *back < 0) continue;
        // Every listed instant is up to the newest one.
        view(std::move(name), scope.array->InstantAt(static_cast<uint64_t>(*back)));
      }
      break;
    }
    case DirKind::kSlices:
    case DirKind::kDiffs:
      break;  // any well-formed name resolves; none is listed
  }
  return out;
}

Result<NodeAttr> ArrayTree::GetAttr(const std::string& path) {
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
  // A folder of a view that never changes (history/<T>/... up to the
  // newest instant, fragments/<name>/...) is listed without rechecking the
  // array's folders first: nothing a commit adds can show in it, and a
  // consolidation or vacuum that rewrites it is the watcher's to report
  // (as for lookups). `find` lists thousands of these.
  const NamespaceEntry* top = parts.size() >= 2 ? FindEntry(kRootView, parts[0]) : nullptr;
  const bool maybe_fixed =
      top != nullptr && top->type == NodeType::kDirectory && HoldsFixedViews(top->dir);
  auto found = Resolve(path, !maybe_fixed);
  // Not found, or not fixed after all (a later instant): as any folder.
  if (maybe_fixed && (!found.ok() || !found->first->immutable)) found = Resolve(path, true);
  ASSIGN_OR_RETURN(auto resolved, std::move(found));
  const Scope& scope = *resolved.first;
  const std::vector<std::string>& rest = resolved.second;
  ASSIGN_OR_RETURN(NodeAttr self, Attr(scope, rest));
  if (self.type != NodeType::kDirectory) {
    return Error::InvalidArgument(fmt::format("{}: not a directory", path));
  }
  // Attr found a folder of the top: its entry is there.
  if (!rest.empty()) return ListDir(scope, *FindEntry(scope.kind, rest[0]));
  std::vector<DirEntryAttr> out;
  for (const NamespaceEntry& e : NamespaceEntries()) {
    if ((e.views & scope.kind) == 0) continue;
    if (e.type == NodeType::kDirectory) {
      out.push_back({std::string(e.name), DirAttr(scope, e)});
      continue;
    }
    NodeAttr a;  // sized by GetAttr, as in ListDir
    a.mtime_ms = scope.mtime_ms;
    a.immutable = scope.immutable;
    a.sized = false;
    out.push_back({std::string(e.name), a});
  }
  return out;
}

Result<std::unique_ptr<OpenFile>> ArrayTree::Open(const std::string& path) {
  ASSIGN_OR_RETURN(auto resolved, Resolve(path, true));
  const Scope& scope = *resolved.first;
  const std::vector<std::string>& rest = resolved.second;
  ASSIGN_OR_RETURN(NodeAttr a, Attr(scope, rest));
  if (a.type != NodeType::kFile)
    return Error::InvalidArgument(fmt::format("{}: is a directory", path));
  ASSIGN_OR_RETURN(FileRef found, FileAt(scope, rest));
  std::unique_ptr<OpenFile> file;
  if (found.cells) {
    ASSIGN_OR_RETURN(file, OpenCellFile(scope, *found.cells));
  } else if (found.diff_csv) {
    file = MakeStreamedFile(found.diff_csv->layout, found.diff_csv->renderer);
  } else {
    file.reset(new StringFile(found.document));
  }
  file->snapshot_id = resolved.first->snapshot;
  file->mtime_ms = a.mtime_ms;
  return file;
}

}  // namespace tiledbfs::fusefs
