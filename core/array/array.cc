#include "core/array/array.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>

#include "core/array/array_view.h"
#include "core/array/conditions.h"
#include "core/index/index_store.h"
#include "core/read/sparse_windows.h"
#include "core/tile/generic_tile.h"
#include "core/util/parallel.h"

namespace tiledbfs::core {
namespace {

// Fragments of format 15+ in sparse arrays may carry per-cell timestamps
// (consolidation with timestamps): TileDB takes them into a view when their
// range merely overlaps it and filters cells (ArrayDirectory::timestamps_overlap).
bool TakesPartialOverlap(const TimestampedName& name, bool sparse) {
  return sparse && name.version >= 15;
}

// The encryption type byte of a generic tile header (offset 29).
Result<bool> TileIsEncrypted(const Storage& storage, const std::string& path) {
  ASSIGN_OR_RETURN(ByteVec head, storage.Read(path, 0, kGenericTileFixedHeaderSize));
  // 0: none, 1: AES-256-GCM; anything else is damage, not a reason to ask for a key.
  if (head[29] > 1) {
    return Error::Corrupt(fmt::format("generic tile header: unknown encryption type {}", head[29]));
  }
  return head[29] == 1;
}

}  // namespace

Result<std::shared_ptr<Array>> Array::Open(std::shared_ptr<const Storage> storage,
                                           std::optional<EncryptionKey> key, const Limits& limits) {
  std::shared_ptr<Array> a(new Array());
  a->storage_ = std::move(storage);
  a->key_ = std::move(key);
  a->limits_ = limits;
  // A writer at work can remove a file between the listing and its read (a
  // vacuum deletes the .vac files it lists last): list again, a few times.
  for (int attempt = 0;; ++attempt) {
    a->stamps_ = TakeStamps(*a->storage_);
    Result<ArrayListing> listing = ListArray(*a->storage_, limits);
    if (listing.ok()) {
      a->listing_ = std::move(listing).value();
      break;
    }
    if (listing.error().code() != ErrorCode::kNotFound || attempt == 3 || !a->storage_->IsDir("")) {
      return listing.error();
    }
  }
  if (a->listing_.schemas.empty()) {
    return Error::NotFound(fmt::format("{}: not a TileDB array (no schema)", a->storage_->root()));
  }
  ASSIGN_OR_RETURN_CTX(a->encrypted_, TileIsEncrypted(*a->storage_, a->listing_.schemas[0].path),
                       a->listing_.schemas[0].path);
  if (a->encrypted_ && !a->key_) {
    return Error::Key(
        fmt::format("{}: the array is encrypted (AES-256-GCM): give its key", a->storage_->root()));
  }
  for (const SchemaFile& f : a->listing_.schemas) {
    ASSIGN_OR_RETURN(ArraySchema s, LoadArraySchema(*a->storage_, f.path, a->key(), a->limits_));
    s.name = f.name;
    s.timestamp_start = f.t1;
    s.timestamp_end = f.t2;
    auto ptr = std::make_shared<const ArraySchema>(std::move(s));
    a->schemas_[f.name] = ptr;
    a->schema_order_.push_back(ptr);
  }
  a->Index();
  return a;
}

std::shared_ptr<const ArraySchema> Array::SchemaAt(uint64_t t) const {
  std::shared_ptr<const ArraySchema> chosen;
  for (const auto& s : schema_order_) {
    if (s->name == "__array_schema.tdb") continue;
    if (s->timestamp_end <= t) chosen = s;
  }
  return chosen ? chosen : schema_order_.front();
}

std::shared_ptr<const ArraySchema> Array::LatestSchema() const { return schema_order_.back(); }

void Array::Index() {
  const bool sparse = !LatestSchema()->dense();
  const std::vector<FragmentEntry>& frags = listing_.fragments;
  const size_t n = frags.size();
  std::set<std::string> ignored(listing_.ignored.begin(), listing_.ignored.end());
  std::unordered_map<std::string, size_t> by_dir;
  by_dir.reserve(n);
  for (size_t i = 0; i < n; ++i) by_dir.emplace(frags[i].dir, i);

  // A fragment leaves the views from the first vacuum file in view that
  // lists it (listing_.ignored ones never enter: retired from 0 on).
  std::vector<Span> spans(n);
  for (size_t i = 0; i < n; ++i) {
    const TimestampedName& name = frags[i].name;
    spans[i].from = TakesPartialOverlap(name, sparse) ? name.t1 : name.t2;
    spans[i].t2 = name.t2;
    spans[i].retired = ignored.count(frags[i].dir) != 0;
  }
  // A vacuum file some of whose fragments are gone while others remain is a
  // vacuum under way (or one that stopped): the rest are going too, so they
  // leave every view now. Otherwise a view inside the consolidated range
  // (a dense one, before the new fragment shows) would take the survivors
  // only: cells of a state the array never had, fill values between them.
  for (const VacuumFile& v : listing_.fragment_vacuums) {
    const uint64_t in_view_from = TakesPartialOverlap(v.name, sparse) ? v.name.t1 : v.name.t2;
    const bool partly_vacuumed =
        std::any_of(v.entries.begin(), v.entries.end(),
                    [&](const std::string& e) { return by_dir.count(e) == 0; });
    const uint64_t until = partly_vacuumed ? 0 : in_view_from;
    for (const std::string& entry : v.entries) {
      auto it = by_dir.find(entry);
      if (it == by_dir.end()) continue;
      Span& span = spans[it->second];
      span.until = span.retired ? std::min(span.until, until) : until;
      span.retired = true;
    }
  }

  // Narrow fragments (never retired, in view only from their end on) add
  // their t2 to the instant of every view that takes them: sorted by
  // `from`, a running maximum answers InstantAt by binary search.
  std::vector<size_t> narrow;
  for (size_t i = 0; i < n; ++i) {
    if (!spans[i].retired && spans[i].from >= spans[i].t2) {
      narrow.push_back(i);
    } else {
      other_frags_.push_back(i);
    }
  }
  std::stable_sort(narrow.begin(), narrow.end(),
                   [&](size_t a, size_t b) { return spans[a].from < spans[b].from; });
  uint64_t running = 0;
  for (size_t i : narrow) {
    running = std::max(running, spans[i].t2);
    narrow_from_.push_back(spans[i].from);
    narrow_max_t2_.push_back(running);
  }
  narrow_order_ = std::move(narrow);

  std::set<uint64_t> all;
  for (const auto& s : listing_.schemas) {
    if (s.name != "__array_schema.tdb") {
      all.insert(s.t2);
      other_instants_.push_back(s.t2);
    }
  }
  for (const auto& f : frags) all.insert(f.name.t2);
  for (const auto& c : listing_.conditions) {
    all.insert(c.name.t2);
    other_instants_.push_back(c.name.t2);
  }
  for (const auto& m : listing_.metadata_files) {
    all.insert(m.t2);
    other_instants_.push_back(m.t2);
  }
  std::sort(other_instants_.begin(), other_instants_.end());
  instants_.assign(all.begin(), all.end());
  delete_rules_.resize(listing_.conditions.size());

  table_->spans = std::move(spans);
  table_->loaded.resize(n);
  fragment_index_ = std::move(by_dir);
}

Result<std::vector<uint64_t>> Array::Instants() const { return instants_; }

Result<uint64_t> Array::LatestInstant() const { return instants_.empty() ? 0 : instants_.back(); }

uint64_t Array::InstantAt(uint64_t t) const {
  uint64_t instant = 0;
  auto o = std::upper_bound(other_instants_.begin(), other_instants_.end(), t);
  if (o != other_instants_.begin()) instant = *(o - 1);
  auto k = std::upper_bound(narrow_from_.begin(), narrow_from_.end(), t);
  if (k != narrow_from_.begin())
    instant = std::max(instant, narrow_max_t2_[k - narrow_from_.begin() - 1]);
  for (size_t i : other_frags_) {
    const Span& s = table_->spans[i];
    if (s.In(t)) instant = std::max(instant, std::min(s.t2, t));
  }
  return instant;
}

std::vector<std::shared_ptr<FragmentMetadata>> Array::FragmentTable::At(uint64_t t) const {
  std::vector<std::shared_ptr<FragmentMetadata>> out;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].In(t)) out.push_back(loaded[i]);
  }
  return out;
}

Status Array::LoadConsolidatedFooters() {
  if (consolidated_loaded_) return Ok();
  for (const std::string& path : listing_.fragment_meta_files) {
    ASSIGN_OR_RETURN(ConsolidatedFragmentMeta file,
                     LoadConsolidatedFragmentMeta(*storage_, path, key(), limits_));
    consolidated_files_.push_back(std::move(file));
  }
  for (const ConsolidatedFragmentMeta& file : consolidated_files_) {
    for (const ConsolidatedFooter& f : file) consolidated_footers_.push_back(&f);
  }
  // Stable: of entries with one name, the first file's comes first and stays.
  auto by_name = [](const ConsolidatedFooter* a, const ConsolidatedFooter* b) {
    return a->fragment_name < b->fragment_name;
  };
  std::stable_sort(consolidated_footers_.begin(), consolidated_footers_.end(), by_name);
  auto same = [](const ConsolidatedFooter* a, const ConsolidatedFooter* b) {
    return a->fragment_name == b->fragment_name;
  };
  consolidated_footers_.erase(
      std::unique(consolidated_footers_.begin(), consolidated_footers_.end(), same),
      consolidated_footers_.end());
  consolidated_loaded_ = true;
  return Ok();
}

Result<std::shared_ptr<FragmentMetadata>> Array::LoadFragment(const FragmentEntry& entry) {
  const ConsolidatedFooter* footer = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TRY(LoadConsolidatedFooters());
    const std::string_view name = entry.name.name;
    auto f =
        std::partition_point(consolidated_footers_.begin(), consolidated_footers_.end(),
                             [&](const ConsolidatedFooter* c) { return c->fragment_name < name; });
    if (f != consolidated_footers_.end() && (*f)->fragment_name == name) footer = *f;
  }
  // A footer from __fragment_meta/ saves reading the fragment's own file.
  return footer != nullptr
             ? FragmentMetadata::FromFooter(storage_, entry.dir, entry.name, footer->footer,
                                            footer->offset, schemas_, key(), limits_)
             : FragmentMetadata::Load(storage_, entry.dir, entry.name, schemas_, key(), limits_);
}

Result<std::shared_ptr<FragmentMetadata>> Array::Fragment(const FragmentEntry& entry) {
  auto it = fragment_index_.find(entry.dir);
  if (it == fragment_index_.end()) {
    // Not a committed fragment of this listing: loaded, not kept.
    return LoadFragment(entry);
  }
  TRY(LoadFragments({it->second}));
  std::lock_guard<std::mutex> lock(mu_);
  return table_->loaded[it->second];
}

Status Array::LoadFragments(const std::vector<size_t>& want) {
  std::vector<size_t> missing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i : want) {
      if (!table_->loaded[i]) missing.push_back(i);
    }
  }
  // Where each footer read is a round trip (S3), PreferredParallelism of
  // them at once, on threads of their own (they wait, more than there are
  // cores); the first failure in the fragments' order is returned.
  const size_t parallel = storage_->PreferredParallelism();
  if (parallel > 1 && missing.size() > 1) {
    std::vector<std::optional<Error>> failed(missing.size());
    ParallelForOnNewThreads(
        missing.size(),
        [&](size_t k) {
          const size_t i = missing[k];
          try {
            Result<std::shared_ptr<FragmentMetadata>> md = LoadFragment(listing_.fragments[i]);
            if (!md.ok()) {
              failed[k] = md.error();
              return;
            }
            std::lock_guard<std::mutex> lock(mu_);
            if (!table_->loaded[i]) table_->loaded[i] = std::move(md).value();
          } catch (const std::bad_alloc&) {
            failed[k] =
                Error::OutOfMemory(fmt::format("{}: fragment metadata", listing_.fragments[i].dir));
          }
        },
        static_cast<unsigned>(std::min(parallel, missing.size())));
    for (std::optional<Error>& e : failed) {
      if (e) return std::move(*e);
    }
    return Ok();
  }
  for (size_t i : missing) {
    ASSIGN_OR_RETURN(std::shared_ptr<FragmentMetadata> md, LoadFragment(listing_.fragments[i]));
    std::lock_guard<std::mutex> lock(mu_);
    if (!table_->loaded[i]) table_->loaded[i] = std::move(md);
  }
  return Ok();
}

Result<std::shared_ptr<const ArrayView>> Array::ViewAt(uint64_t t) {
  auto remember = [this](uint64_t at, const std::shared_ptr<const ArrayView>& view) {
    // Called with mu_ held: `at` becomes the most recent of the kept views.
    for (auto it = recent_views_.begin(); it != recent_views_.end(); ++it) {
      if (it->first == at) {
        recent_views_.splice(recent_views_.begin(), recent_views_, it);
        return;
      }
    }
    recent_views_.emplace_front(at, view);
    if (recent_views_.size() > kCachedViews) recent_views_.pop_back();
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_views_.find(t);
    if (it != live_views_.end()) {
      if (std::shared_ptr<const ArrayView> view = it->second.lock()) {
        remember(t, view);
        return view;
      }
    }
  }
  // The footers the view takes: the narrow fragments are a prefix of
  // narrow_order_ (loaded up to narrow_loaded_), the others one by one.
  std::vector<size_t> want;
  const size_t prefix = static_cast<size_t>(
      std::upper_bound(narrow_from_.begin(), narrow_from_.end(), t) - narrow_from_.begin());
  size_t loaded_prefix;
  {
    std::lock_guard<std::mutex> lock(mu_);
    loaded_prefix = narrow_loaded_;
  }
  for (size_t k = loaded_prefix; k < prefix; ++k) want.push_back(narrow_order_[k]);
  for (size_t i : other_frags_) {
    if (table_->spans[i].In(t)) want.push_back(i);
  }
  TRY(LoadFragments(want));

  ViewInputs in;
  in.limits = limits_;
  in.index_window_cells = IndexWindowCells(tile_cache_->budget_bytes());
  in.window_pool = tile_cache_->window_pool();
  in.timestamp = t;
  in.encrypted = encrypted_;
  for (size_t c = 0; c < listing_.conditions.size(); ++c) {
    const ConditionCommit& commit = listing_.conditions[c];
    if (commit.name.t2 > t) continue;
    std::optional<DeleteRule> rule;
    {
      std::lock_guard<std::mutex> lock(mu_);
      rule = delete_rules_[c];
    }
    if (!rule) {
      ASSIGN_OR_RETURN(DeleteRule loaded, LoadDeleteRule(*this, commit));
      std::lock_guard<std::mutex> lock(mu_);
      delete_rules_[c] = loaded;
      rule = std::move(loaded);
    }
    in.deletes.push_back(std::move(*rule));
  }
  // The fragment list is gathered when the view is first read: every
  // footer it needs is loaded above, so gathering cannot fail.
  std::shared_ptr<const FragmentTable> table = table_;
  auto view = std::make_shared<const ArrayView>(SchemaAt(t), std::move(in), InstantAt(t),
                                                tile_cache_, [table, t]() { return table->At(t); });
  std::lock_guard<std::mutex> lock(mu_);
  narrow_loaded_ = std::max(narrow_loaded_, prefix);
  auto it = live_views_.find(t);
  if (it != live_views_.end()) {
    // Built by another thread meanwhile: share one view (and its index).
    if (std::shared_ptr<const ArrayView> other = it->second.lock()) {
      remember(t, other);
      return other;
    }
  }
  live_views_[t] = view;
  remember(t, view);
  if (live_views_.size() > 4 * kCachedViews) {
    for (auto w = live_views_.begin(); w != live_views_.end();) {
      w = w->second.expired() ? live_views_.erase(w) : std::next(w);
    }
  }
  return std::shared_ptr<const ArrayView>(view);
}

Array::FolderStamps Array::TakeStamps(const Storage& storage, const FolderStamps* previous) {
  // Settled: older than this when taken.
  constexpr int64_t kSettleNs = int64_t{2} * 1000 * 1000 * 1000;
  FolderStamps s;
  std::vector<std::string> dirs;
  std::optional<int64_t> root;
  if (previous != nullptr && previous->valid && previous->settled && !previous->dirs.empty() &&
      previous->dirs[0].first.empty()) {
    root = storage.DirModifiedNs("");
    if (root && *root == previous->dirs[0].second) {
      for (const auto& [d, t] : previous->dirs) dirs.push_back(d);
    } else {
      root.reset();
    }
  }
  if (dirs.empty()) {
    auto entries = storage.List("");
    if (!entries.ok()) return s;
    dirs = {""};
    for (const DirEntry& e : *entries) {
      if (e.is_dir && e.name.rfind("__", 0) == 0) dirs.push_back(e.name);
    }
  }
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  s.settled = true;
  for (const std::string& d : dirs) {
    std::optional<int64_t> t = d.empty() && root ? root : storage.DirModifiedNs(d);
    if (!t) return FolderStamps{};
    s.dirs.emplace_back(d, *t);
    if (*t > now - kSettleNs) s.settled = false;
  }
  s.valid = true;
  return s;
}

Result<std::string> Array::VersionOf(const std::string& path) const {
  if (auto it = versions_.find(path); it != versions_.end()) return it->second;
  auto digest = [](const std::vector<DirEntry>& files, size_t from, size_t to) {
    std::string text;
    for (size_t i = from; i < to; ++i) {
      text += fmt::format("{} {} {}\n", files[i].name, files[i].size, files[i].version);
    }
    return IndexDigest(text);
  };
  const size_t slash = path.find('/');
  if (slash == std::string::npos) {
    // At the root: a legacy fragment's folder or a legacy schema file.
    ASSIGN_OR_RETURN(std::vector<DirEntry> root, storage_->List(""));
    auto it =
        std::find_if(root.begin(), root.end(), [&](const DirEntry& e) { return e.name == path; });
    if (it == root.end())
      return Error::NotFound(fmt::format("{}: not in the array's folder", path));
    std::vector<DirEntry> files;
    if (it->is_dir) {
      ASSIGN_OR_RETURN(files, storage_->ListTree(path, limits_.max_files));
    } else {
      files.push_back(*it);
    }
    return versions_[path] = digest(files, 0, files.size());
  }
  // Below a top folder: the folder is listed once, and a digest kept for
  // each of its entries (a fragment's folder, a commit file).
  const std::string top = path.substr(0, slash);
  if (versions_listed_.insert(top).second) {
    ASSIGN_OR_RETURN(std::vector<DirEntry> files, storage_->ListTree(top, limits_.max_files));
    for (size_t from = 0; from < files.size();) {
      const std::string child = files[from].name.substr(0, files[from].name.find('/'));
      size_t to = from + 1;
      while (to < files.size() && files[to].name.starts_with(child) &&
             (files[to].name.size() == child.size() || files[to].name[child.size()] == '/')) {
        ++to;
      }
      versions_[JoinPath(top, child)] = digest(files, from, to);
      from = to;
    }
  }
  if (auto it = versions_.find(path); it != versions_.end()) return it->second;
  return Error::NotFound(fmt::format("{}: not listed in {}/", path, top));
}

Result<std::string> Array::FileVersions(const ArrayView& view) const {
  std::lock_guard<std::mutex> lock(versions_mu_);
  std::string out;
  auto add = [&](const std::string& path) -> Status {
    ASSIGN_OR_RETURN(std::string v, VersionOf(path));
    out += fmt::format("{} {}\n", path, v);
    return Ok();
  };
  TRY(AddSchemaVersions(view.schema(), out));
  for (const auto& f : view.fragments()) TRY(add(f->dir()));
  for (const std::string& marker : view.DeleteMarkers()) {
    for (const ConditionCommit& c : listing_.conditions) {
      if (c.name.name + c.name.extension == marker) TRY(add(c.path));
    }
  }
  return out;
}

Status Array::AddSchemaVersions(const ArraySchema& schema, std::string& out) const {
  for (const SchemaFile& s : listing_.schemas) {
    if (s.name != schema.name) continue;
    ASSIGN_OR_RETURN(std::string v, VersionOf(s.path));
    out += fmt::format("{} {}\n", s.path, v);
  }
  // Enumerations are read with the schema.
  if (listing_.has_enumerations_dir) {
    ASSIGN_OR_RETURN(std::string v, VersionOf("__schema/__enumerations"));
    out += fmt::format("__schema/__enumerations {}\n", v);
  }
  return Ok();
}

Result<std::string> Array::SchemaVersions(const ArraySchema& schema) const {
  std::lock_guard<std::mutex> lock(versions_mu_);
  std::string out;
  TRY(AddSchemaVersions(schema, out));
  return out;
}

Result<std::string> Array::FragmentVersion(const FragmentMetadata& fragment) const {
  std::lock_guard<std::mutex> lock(versions_mu_);
  return VersionOf(fragment.dir());
}

bool Array::Changed() const {
  std::lock_guard<std::mutex> lock(stamps_mu_);
  FolderStamps stamps = TakeStamps(*storage_, &stamps_);
  if (stamps.valid && stamps_.valid && stamps_.settled && stamps.dirs == stamps_.dirs) {
    return false;
  }
  auto now = ListArray(*storage_, limits_);
  // A store that cannot be reached (S3 down: kIo after the retries) says
  // nothing about the array: the state last seen keeps being served, rather
  // than every lookup failing on a reopen (issue 38).
  if (!now.ok()) return now.error().code() != ErrorCode::kIo;
  auto names = [](const ArrayListing& l) {
    std::vector<std::string> v;
    for (const auto& f : l.fragments) v.push_back(f.dir);
    for (const auto& f : l.fragment_vacuums) v.push_back(f.path);
    for (const auto& f : l.conditions) v.push_back(f.path);
    for (const auto& f : l.metadata_files) v.push_back(f.name);
    for (const auto& f : l.schemas) v.push_back(f.path);
    v.insert(v.end(), l.ignored.begin(), l.ignored.end());
    return v;
  };
  if (names(*now) != names(listing_)) return true;
  stamps_ = std::move(stamps);
  return false;
}

}  // namespace tiledbfs::core
