#include "core/array/array.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "core/array/array_view.h"
#include "core/array/conditions.h"
#include "core/tile/generic_tile.h"

namespace tiledbfs::core {
namespace {

// Fragments of format 15+ in sparse arrays may carry per-cell timestamps
// (consolidation with timestamps): TileDB takes them into a view when their
// range merely overlaps it and filters cells (ArrayDirectory::timestamps_overlap).
bool TakesPartialOverlap(const TimestampedName& name, bool sparse) {
  return sparse && name.version >= 15;
}

bool InView(const TimestampedName& name, uint64_t t, bool sparse) {
  return TakesPartialOverlap(name, sparse) ? name.t1 <= t : name.t2 <= t;
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
    ASSIGN_OR_RETURN(ArraySchema s, LoadArraySchema(*a->storage_, f.path, a->key()));
    s.name = f.name;
    s.timestamp_start = f.t1;
    s.timestamp_end = f.t2;
    auto ptr = std::make_shared<const ArraySchema>(std::move(s));
    a->schemas_[f.name] = ptr;
    a->schema_order_.push_back(ptr);
  }
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

Result<std::vector<uint64_t>> Array::Instants() const {
  std::set<uint64_t> out;
  for (const auto& s : listing_.schemas) {
    if (s.name != "__array_schema.tdb") out.insert(s.t2);
  }
  for (const auto& f : listing_.fragments) out.insert(f.name.t2);
  for (const auto& c : listing_.conditions) out.insert(c.name.t2);
  for (const auto& m : listing_.metadata_files) out.insert(m.t2);
  return std::vector<uint64_t>(out.begin(), out.end());
}

Result<uint64_t> Array::LatestInstant() const {
  ASSIGN_OR_RETURN(std::vector<uint64_t> all, Instants());
  return all.empty() ? 0 : all.back();
}

Status Array::LoadConsolidatedFooters() {
  if (consolidated_loaded_) return Ok();
  for (const std::string& path : listing_.fragment_meta_files) {
    ASSIGN_OR_RETURN(std::vector<ConsolidatedFooter> footers,
                     LoadConsolidatedFragmentMeta(*storage_, path, key(), limits_));
    for (ConsolidatedFooter& f : footers) {
      consolidated_footers_.emplace(f.fragment_name, std::move(f));
    }
  }
  consolidated_loaded_ = true;
  return Ok();
}

Result<std::shared_ptr<FragmentMetadata>> Array::Fragment(const FragmentEntry& entry) {
  const ConsolidatedFooter* footer = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = fragments_.find(entry.dir);
    if (it != fragments_.end()) return it->second;
    TRY(LoadConsolidatedFooters());
    auto f = consolidated_footers_.find(entry.name.name);
    if (f != consolidated_footers_.end()) footer = &f->second;
  }
  // A footer from __fragment_meta/ saves reading the fragment's own file.
  Result<std::shared_ptr<FragmentMetadata>> loaded =
      footer != nullptr
          ? FragmentMetadata::FromFooter(storage_, entry.dir, entry.name, footer->footer,
                                         footer->offset, schemas_, key(), limits_)
          : FragmentMetadata::Load(storage_, entry.dir, entry.name, schemas_, key(), limits_);
  if (!loaded.ok()) return loaded.error();
  std::shared_ptr<FragmentMetadata> md = std::move(loaded).value();
  std::lock_guard<std::mutex> lock(mu_);
  fragments_[entry.dir] = md;
  return md;
}

Result<std::shared_ptr<const ArrayView>> Array::ViewAt(uint64_t t) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = views_.find(t);
    if (it != views_.end()) return it->second;
  }
  const bool sparse = !LatestSchema()->dense();
  // Fragments retired by a vacuum file that is itself in the view.
  std::set<std::string> retired;
  for (const VacuumFile& v : listing_.fragment_vacuums) {
    if (!InView(v.name, t, sparse)) continue;
    retired.insert(v.entries.begin(), v.entries.end());
  }
  std::set<std::string> ignored(listing_.ignored.begin(), listing_.ignored.end());
  ViewInputs in;
  in.timestamp = t;
  in.encrypted = encrypted_;
  uint64_t instant = 0;
  for (const auto& s : listing_.schemas) {
    if (s.name != "__array_schema.tdb" && s.t2 <= t) instant = std::max(instant, s.t2);
  }
  for (const FragmentEntry& e : listing_.fragments) {
    if (!InView(e.name, t, sparse) || retired.count(e.dir) || ignored.count(e.dir)) continue;
    ASSIGN_OR_RETURN(std::shared_ptr<FragmentMetadata> md, Fragment(e));
    in.fragments.push_back(std::move(md));
    instant = std::max(instant, std::min(e.name.t2, t));
  }
  for (const ConditionCommit& c : listing_.conditions) {
    if (c.name.t2 > t) continue;
    ASSIGN_OR_RETURN(DeleteRule rule, LoadDeleteRule(*this, c));
    in.deletes.push_back(std::move(rule));
    instant = std::max(instant, c.name.t2);
  }
  for (const auto& m : listing_.metadata_files) {
    if (m.t2 <= t) instant = std::max(instant, m.t2);
  }
  auto view = std::make_shared<const ArrayView>(SchemaAt(t), std::move(in), instant, tile_cache_);
  std::lock_guard<std::mutex> lock(mu_);
  views_[t] = view;
  return std::shared_ptr<const ArrayView>(view);
}

Array::FolderStamps Array::TakeStamps(const Storage& storage) {
  // Settled: older than this when taken.
  constexpr int64_t kSettleNs = int64_t{2} * 1000 * 1000 * 1000;
  FolderStamps s;
  auto entries = storage.List("");
  if (!entries.ok()) return s;
  std::vector<std::string> dirs = {""};
  for (const DirEntry& e : *entries) {
    if (e.is_dir && e.name.rfind("__", 0) == 0) dirs.push_back(e.name);
  }
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  s.settled = true;
  for (const std::string& d : dirs) {
    std::optional<int64_t> t = storage.DirModifiedNs(d);
    if (!t) return FolderStamps{};
    s.dirs.emplace_back(d, *t);
    if (*t > now - kSettleNs) s.settled = false;
  }
  s.valid = true;
  return s;
}

bool Array::Changed() const {
  std::lock_guard<std::mutex> lock(stamps_mu_);
  FolderStamps stamps = TakeStamps(*storage_);
  if (stamps.valid && stamps_.valid && stamps_.settled && stamps.dirs == stamps_.dirs) {
    return false;
  }
  auto now = ListArray(*storage_, limits_);
  if (!now.ok()) return true;
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
