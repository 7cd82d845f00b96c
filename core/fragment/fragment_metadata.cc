#include "core/fragment/fragment_metadata.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <iterator>
#include <utility>

#include "core/fragment/legacy_fragment_metadata.h"
#include "core/tile/generic_tile.h"
#include "core/util/byte_reader.h"

namespace tiledbfs::core {
namespace {

template <class T>
struct Slot {
  std::mutex mu;
  std::atomic<bool> done{false};
  T value;
};

// Returns the slot's value, running `load` (which returns Result<T>) under
// the slot's lock the first time. A failed load leaves the slot empty.
template <class T, class F>
Result<const T*> GetOnce(Slot<T>& s, F&& load) {
  if (!s.done.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.done.load(std::memory_order_relaxed)) {
      ASSIGN_OR_RETURN(T v, load());
      s.value = std::move(v);
      s.done.store(true, std::memory_order_release);
    }
  }
  return static_cast<const T*>(&s.value);
}

// One per-tile uint64 list section (tile offsets, var offsets, var sizes,
// validity offsets) of field index i, loaded once: `read(at, what)` fetches
// the generic tile's data. Legacy (< 3) fragments have these lists preset
// and no section offsets, so `offsets` may be shorter than i.
template <class Read>
Result<const std::vector<uint64_t>*> LoadTileList(Slot<std::vector<uint64_t>>& slot,
                                                  const std::vector<uint64_t>& offsets, int i,
                                                  const std::string& what, const std::string& file,
                                                  uint64_t tile_num, Read&& read) {
  return GetOnce(slot, [&]() -> Result<std::vector<uint64_t>> {
    const uint64_t at = static_cast<size_t>(i) < offsets.size() ? offsets[i] : 0;
    const std::string ctx = fmt::format("{}: {} (generic tile at {})", file, what, at);
    ASSIGN_OR_RETURN(ByteVec data, read(at, what));
    ASSIGN_OR_RETURN_CTX(auto values, ParseUint64List(data, 0, what), ctx);
    if (!values.empty() && values.size() != tile_num) {
      return Error::Corrupt(
          fmt::format("{}: {} values for a fragment of {} tiles", ctx, values.size(), tile_num));
    }
    return values;
  });
}

template <class T>
void Preset(Slot<T>& s, T v) {
  s.value = std::move(v);
  s.done.store(true, std::memory_order_release);
}

std::string FieldName(FieldRef f) {
  switch (f.kind) {
    case FieldRef::Kind::kAttribute:
      return fmt::format("attribute {}", f.index);
    case FieldRef::Kind::kDimension:
      return fmt::format("dimension {}", f.index);
    case FieldRef::Kind::kCoords:
      return "coords";
    case FieldRef::Kind::kTimestamps:
      return "timestamps";
    case FieldRef::Kind::kDeleteTimestamps:
      return "delete timestamps";
    case FieldRef::Kind::kDeleteConditionIndex:
      return "delete condition index";
  }
  return "field";
}

// Format 8 percent-encodes these characters of field names in data file
// names. The last four codes are TileDB's own (not RFC 3986) and are what
// is on disk.
constexpr std::pair<char, const char*> kPercentCodes[] = {
    {'!', "%21"}, {'#', "%23"}, {'$', "%24"}, {'%', "%25"}, {'&', "%26"},  {'\'', "%27"},
    {'(', "%28"}, {')', "%29"}, {'*', "%2A"}, {'+', "%2B"}, {',', "%2C"},  {'/', "%2F"},
    {':', "%3A"}, {';', "%3B"}, {'=', "%3D"}, {'?', "%3F"}, {'@', "%40"},  {'[', "%5B"},
    {']', "%5D"}, {'"', "%22"}, {'<', "%20"}, {'>', "%2D"}, {'\\', "%30"}, {'|', "%3C"}};

std::string PercentEncode(const std::string& name) {
  std::string out;
  for (char c : name) {
    const auto* code = std::find_if(std::begin(kPercentCodes), std::end(kPercentCodes),
                                    [c](const auto& pc) { return pc.first == c; });
    if (code != std::end(kPercentCodes)) {
      out += code->second;
    } else {
      out += c;
    }
  }
  return out;
}

bool AllDimsFixed(const ArraySchema& schema) {
  for (const auto& d : schema.dimensions) {
    if (d.var()) return false;
  }
  return true;
}

Result<std::shared_ptr<const ArraySchema>> FindSchema(
    const std::map<std::string, std::shared_ptr<const ArraySchema>>& schemas,
    const std::string& name, const std::string& file) {
  auto it = schemas.find(name);
  if (it == schemas.end() || it->second == nullptr) {
    return Error::NotFound(fmt::format("{}: the fragment's schema {} is not loaded", file, name));
  }
  return it->second;
}

}  // namespace

struct FragmentMetadata::Lazy {
  explicit Lazy(size_t n) : stats(new Slot<TileStats>[n]) {
    for (auto& list : tile_lists) list.reset(new Slot<std::vector<uint64_t>>[n]);
  }
  Slot<std::vector<uint64_t>>& tile_list(TileList which, size_t i) {
    return tile_lists[static_cast<size_t>(which)][i];
  }
  std::array<std::unique_ptr<Slot<std::vector<uint64_t>>[]>, kTileLists> tile_lists;
  std::unique_ptr<Slot<TileStats>[]> stats;
  Slot<std::vector<std::vector<Range>>> mbrs;
  Slot<std::vector<FragmentStats>> fragment_stats;
  Slot<std::vector<std::string>> processed_conditions;
};

std::string FragmentMetadata::metadata_file() const {
  return JoinPath(dir_, kFragmentMetadataFile);
}

Result<std::shared_ptr<FragmentMetadata>> FragmentMetadata::Load(
    std::shared_ptr<const Storage> storage, const std::string& fragment_dir,
    const TimestampedName& name,
    const std::map<std::string, std::shared_ptr<const ArraySchema>>& schemas,
    const EncryptionKey* key, const Limits& limits) {
  const uint32_t name_version = name.ImpliedFormatVersion();
  if (!HasFragmentFooter(name_version)) {
    return LoadLegacy(std::move(storage), fragment_dir, name, schemas, key, limits);
  }
  const std::string meta = JoinPath(fragment_dir, kFragmentMetadataFile);
  // The file's last bytes, read once: they usually hold the whole footer.
  // A small file comes whole with its size, from one open.
  constexpr uint64_t kTailBytes = 4096;
  ASSIGN_OR_RETURN(SmallFile small, storage->ReadIfSmall(meta, kTailBytes));
  const uint64_t file_size = small.size;

  // Before 10 the footer refers to the legacy schema, which also says how
  // the footer is found.
  std::shared_ptr<const ArraySchema> legacy_schema;
  if (!HasSchemaName(name_version)) {
    ASSIGN_OR_RETURN(legacy_schema, FindSchema(schemas, kLegacySchemaName, meta));
  }
  uint64_t footer_offset = 0;
  uint64_t footer_size = 0;
  const uint64_t tail_at = file_size - std::min(file_size, kTailBytes);
  ByteVec tail;
  if (small.bytes) {
    tail = std::move(*small.bytes);
  } else {
    ASSIGN_OR_RETURN(tail, storage->Read(meta, tail_at, file_size - tail_at));
  }
  if (HasFooterLength(name_version) || !AllDimsFixed(*legacy_schema)) {
    if (file_size < 8) {
      return Error::Corrupt(fmt::format("{}: {} bytes: no footer length", meta, file_size));
    }
    ByteReader r(Bytes(tail).subspan(tail.size() - 8), file_size - 8);
    ASSIGN_OR_RETURN_CTX(uint64_t length, r.Read<uint64_t>("fragment footer: footer length"), meta);
    if (length > file_size - 8) {
      return Error::Corrupt(fmt::format(
          "{}: offset {}: fragment footer: footer length {} exceeds the {} bytes before it", meta,
          file_size - 8, length, file_size - 8));
    }
    if (length > limits.max_metadata_bytes) {
      return Error::OutOfMemory(fmt::format(
          "{}: offset {}: fragment footer: footer length {} exceeds the limit of {} bytes", meta,
          file_size - 8, length, limits.max_metadata_bytes));
    }
    footer_size = length + 8;
  } else {
    ASSIGN_OR_RETURN_CTX(footer_size, FixedFooterSize(*legacy_schema, name_version), meta);
    if (footer_size > file_size) {
      return Error::Corrupt(fmt::format("{}: the format {} footer takes {} bytes, the file has {}",
                                        meta, name_version, footer_size, file_size));
    }
  }
  footer_offset = file_size - footer_size;
  ByteVec bytes;
  if (footer_offset >= tail_at) {
    bytes.assign(tail.begin() + static_cast<ptrdiff_t>(footer_offset - tail_at), tail.end());
  } else {
    ASSIGN_OR_RETURN(bytes, storage->Read(meta, footer_offset, footer_size));
  }
  ASSIGN_OR_RETURN_CTX(FooterPrefix prefix, PeekFragmentFooter(bytes, footer_offset), meta);

  std::shared_ptr<FragmentMetadata> m(new FragmentMetadata());
  m->storage_ = std::move(storage);
  m->dir_ = fragment_dir;
  m->name_ = name;
  if (key != nullptr) m->key_ = *key;
  m->limits_ = limits;
  m->footer_offset_ = footer_offset;
  m->meta_file_size_ = file_size;
  ASSIGN_OR_RETURN(m->schema_, FindSchema(schemas, prefix.array_schema_name, meta));
  ASSIGN_OR_RETURN_CTX(m->footer_,
                       ParseFragmentFooter(bytes, footer_offset, *m->schema_, name_version), meta);
  TRY(m->Init());
  return m;
}

Result<std::shared_ptr<FragmentMetadata>> FragmentMetadata::FromFooter(
    std::shared_ptr<const Storage> storage, const std::string& fragment_dir,
    const TimestampedName& name, Bytes footer, uint64_t footer_file_offset,
    const std::map<std::string, std::shared_ptr<const ArraySchema>>& schemas,
    const EncryptionKey* key, const Limits& limits) {
  const uint32_t name_version = name.ImpliedFormatVersion();
  // Messages only: built on failure, not once per fragment of an open.
  auto where = [&] { return fmt::format("consolidated footer of {}", fragment_dir); };
  if (!HasFragmentFooter(name_version)) {
    return Error::InvalidArgument(
        fmt::format("{}: format {} fragments have no footer", where(), name_version));
  }
  ASSIGN_OR_RETURN_CTX(FooterPrefix prefix, PeekFragmentFooter(footer, footer_file_offset),
                       where());
  std::shared_ptr<FragmentMetadata> m(new FragmentMetadata());
  m->storage_ = std::move(storage);
  m->dir_ = fragment_dir;
  m->name_ = name;
  if (key != nullptr) m->key_ = *key;
  m->limits_ = limits;
  m->has_consolidated_footer_ = true;
  if (auto found = schemas.find(prefix.array_schema_name);
      found != schemas.end() && found->second != nullptr) {
    m->schema_ = found->second;
  } else {
    ASSIGN_OR_RETURN(m->schema_, FindSchema(schemas, prefix.array_schema_name, where()));
  }
  uint64_t consumed = 0;
  ASSIGN_OR_RETURN_CTX(
      m->footer_,
      ParseFragmentFooterFields(footer, footer_file_offset, *m->schema_, name_version, &consumed),
      where());
  TRY(m->Init());
  return m;
}

Result<std::shared_ptr<FragmentMetadata>> FragmentMetadata::LoadLegacy(
    std::shared_ptr<const Storage> storage, const std::string& fragment_dir,
    const TimestampedName& name,
    const std::map<std::string, std::shared_ptr<const ArraySchema>>& schemas,
    const EncryptionKey* key, const Limits& limits) {
  const std::string meta = JoinPath(fragment_dir, kFragmentMetadataFile);
  ASSIGN_OR_RETURN(uint64_t file_size, storage->Size(meta));
  ASSIGN_OR_RETURN(auto schema, FindSchema(schemas, kLegacySchemaName, meta));
  // A format 1-2 fragment is sparse exactly when it has a coordinates file.
  const bool dense = !storage->Exists(JoinPath(fragment_dir, "__coords.tdb"));
  ASSIGN_OR_RETURN(GenericTile tile, ReadGenericTile(*storage, meta, 0, key, limits));
  ASSIGN_OR_RETURN_CTX(LegacyFragmentMetadata legacy,
                       ParseLegacyFragmentMetadata(tile.data, 0, *schema, dense), meta);

  std::shared_ptr<FragmentMetadata> m(new FragmentMetadata());
  m->storage_ = std::move(storage);
  m->dir_ = fragment_dir;
  m->name_ = name;
  if (key != nullptr) m->key_ = *key;
  m->limits_ = limits;
  m->meta_file_size_ = file_size;
  m->schema_ = std::move(schema);
  m->footer_ = std::move(legacy.footer);
  TRY(m->Init());
  const uint64_t n = m->FieldCount();
  for (uint64_t i = 0; i < n; ++i) {
    Preset(m->Slots().tile_list(TileList::kOffsets, i), std::move(legacy.tile_offsets[i]));
    Preset(m->Slots().tile_list(TileList::kVarOffsets, i), std::move(legacy.tile_var_offsets[i]));
    Preset(m->Slots().tile_list(TileList::kVarSizes, i), std::move(legacy.tile_var_sizes[i]));
  }
  Preset(m->Slots().mbrs, std::move(legacy.mbrs));
  return m;
}

FragmentMetadata::Lazy& FragmentMetadata::Slots() const {
  if (!lazy_made_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(lazy_mu_);
    if (!lazy_made_.load(std::memory_order_relaxed)) {
      lazy_ = std::make_shared<Lazy>(FieldCount());
      lazy_made_.store(true, std::memory_order_release);
    }
  }
  return *lazy_;
}

Status FragmentMetadata::Init() {
  // Messages only (an open of many fragments builds none).
  auto meta = [this] { return metadata_file(); };
  const ArraySchema& s = *schema_;
  if (footer_.dense && !footer_.null_non_empty_domain) {
    ASSIGN_OR_RETURN_CTX(grid_, ComputeDenseTileGrid(s, footer_.non_empty_domain), meta());
    uint64_t cells = 0;
    if (MulOverflow(grid_.tile_num, grid_.cells_per_tile, &cells)) {
      return Error::Corrupt(fmt::format("{}: dense fragment cell count overflows", meta()));
    }
  } else if (!footer_.dense && footer_.sparse_tile_num > 0) {
    uint64_t cells = 0;
    if (MulOverflow(footer_.sparse_tile_num - 1, s.capacity, &cells) ||
        AddOverflow(cells, footer_.last_tile_cell_num, &cells)) {
      return Error::Corrupt(fmt::format("{}: sparse fragment cell count overflows", meta()));
    }
    if (footer_.last_tile_cell_num > s.capacity && s.capacity != 0) {
      return Error::Corrupt(fmt::format("{}: last tile holds {} cells, more than the capacity {}",
                                        meta(), footer_.last_tile_cell_num, s.capacity));
    }
  }
  // The slots (Slots()) are made on first use: an open of many fragments
  // allocates none.
  return Ok();
}

uint64_t FragmentMetadata::FieldCount() const {
  return FooterFieldCount(*schema_, footer_.version, footer_.has_timestamps,
                          footer_.has_delete_meta);
}

int FragmentMetadata::FieldIndex(FieldRef f) const {
  return FooterFieldIndex(*schema_, footer_.version, footer_.has_timestamps,
                          footer_.has_delete_meta, f);
}

uint64_t FragmentMetadata::tile_num() const {
  if (footer_.dense) return footer_.null_non_empty_domain ? 0 : grid_.tile_num;
  return footer_.sparse_tile_num;
}

uint64_t FragmentMetadata::TileCellNum(uint64_t tile) const {
  if (footer_.dense) return grid_.cells_per_tile;
  const uint64_t n = tile_num();
  if (n != 0 && tile == n - 1) return footer_.last_tile_cell_num;
  return schema_->capacity;
}

uint64_t FragmentMetadata::cell_num() const {
  const uint64_t n = tile_num();
  if (n == 0) return 0;
  if (footer_.dense) return n * grid_.cells_per_tile;  // checked in Init
  return (n - 1) * schema_->capacity + footer_.last_tile_cell_num;
}

std::string FragmentMetadata::FieldFileBase(FieldRef f) const {
  if (FieldIndex(f) < 0) return "";
  const uint32_t v = footer_.version;
  switch (f.kind) {
    case FieldRef::Kind::kCoords:
      return "__coords";
    case FieldRef::Kind::kTimestamps:
      return "t";
    case FieldRef::Kind::kDeleteTimestamps:
      return "dt";
    case FieldRef::Kind::kDeleteConditionIndex:
      return "dci";
    case FieldRef::Kind::kAttribute:
    case FieldRef::Kind::kDimension:
      break;
  }
  const bool attr = f.kind == FieldRef::Kind::kAttribute;
  if (HasNumberedDataFiles(v)) return fmt::format("{}{}", attr ? "a" : "d", f.index);
  const std::string& name =
      attr ? schema_->attributes[f.index].name : schema_->dimensions[f.index].name;
  return HasPercentEncodedNames(v) ? PercentEncode(name) : name;
}

std::string FragmentMetadata::DataFile(FieldRef f) const {
  std::string base = FieldFileBase(f);
  return base.empty() ? "" : JoinPath(dir_, base + ".tdb");
}

std::string FragmentMetadata::VarFile(FieldRef f) const {
  std::string base = FieldFileBase(f);
  return base.empty() ? "" : JoinPath(dir_, base + "_var.tdb");
}

std::string FragmentMetadata::ValidityFile(FieldRef f) const {
  std::string base = FieldFileBase(f);
  return base.empty() ? "" : JoinPath(dir_, base + "_validity.tdb");
}

Result<uint64_t> FragmentMetadata::FragmentSize() const {
  uint64_t total = 0;
  for (const auto* a :
       {&footer_.file_sizes, &footer_.file_var_sizes, &footer_.file_validity_sizes}) {
    for (uint64_t s : *a) {
      if (AddOverflow(total, s, &total)) {
        return Error::Corrupt(fmt::format("{}: file sizes overflow", metadata_file()));
      }
    }
  }
  uint64_t meta_size = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!meta_file_size_.has_value()) {
      ASSIGN_OR_RETURN(meta_size, storage_->Size(metadata_file()));
      meta_file_size_ = meta_size;
    }
    meta_size = *meta_file_size_;
  }
  if (AddOverflow(total, meta_size, &total)) {
    return Error::Corrupt(fmt::format("{}: file sizes overflow", metadata_file()));
  }
  return total;
}

Result<int> FragmentMetadata::CheckedIndex(FieldRef f) const {
  const int i = FieldIndex(f);
  if (i < 0) {
    return Error::NotFound(fmt::format("{}: the fragment does not store {}", dir_, FieldName(f)));
  }
  return i;
}

Result<ByteVec> FragmentMetadata::ReadSection(uint64_t offset, std::string_view what) const {
  const std::string meta = metadata_file();
  if (footer_offset_.has_value() && offset >= *footer_offset_) {
    return Error::Corrupt(fmt::format("{}: {} at offset {} is not before the footer at {}", meta,
                                      what, offset, *footer_offset_));
  }
  std::shared_ptr<const ByteVec> whole;
  {
    std::lock_guard<std::mutex> lock(mu_);
    whole = whole_file_;
  }
  if (whole != nullptr) {
    // The same checks as ReadGenericTile, on the bytes in memory.
    const uint64_t size = whole->size();
    if (offset > size || size - offset < kGenericTileFixedHeaderSize) {
      return Error::Corrupt(fmt::format(
          "{}: offset {}: generic tile: need {} header bytes, {} left (truncated)", meta, offset,
          kGenericTileFixedHeaderSize, offset > size ? 0 : size - offset));
    }
    Bytes rest = Bytes(*whole).subspan(offset);
    ByteReader r(rest, offset);
    TRY(r.Skip(4, "generic tile: version"));
    ASSIGN_OR_RETURN(uint64_t persisted, r.Read<uint64_t>("generic tile: persisted size"));
    TRY(r.Skip(18, "generic tile: header"));
    ASSIGN_OR_RETURN(uint32_t pipeline_size,
                     r.Read<uint32_t>("generic tile: filter pipeline size"));
    uint64_t total = 0;
    if (AddOverflow(kGenericTileFixedHeaderSize + pipeline_size, persisted, &total) ||
        total > rest.size()) {
      // Let the parser name the field that does not fit.
      ASSIGN_OR_RETURN(GenericTile t, DecodeGenericTile(rest, meta, offset, key(), limits_));
      (void)t;
      return Error::Corrupt(fmt::format("{}: offset {}: generic tile: truncated", meta, offset));
    }
    ASSIGN_OR_RETURN(GenericTile tile,
                     DecodeGenericTile(rest.subspan(0, total), meta, offset, key(), limits_));
    return std::move(tile.data);
  }
  Result<GenericTile> tile = ReadGenericTile(*storage_, meta, offset, key(), limits_);
  // The file gone under an open view (a vacuum removed the fragment before
  // this section was loaded) is an I/O error of the read that needs it, not
  // a name that does not exist.
  if (!tile.ok() && tile.error().code() == ErrorCode::kNotFound) {
    return Error::Io(tile.error().message());
  }
  if (!tile.ok()) return tile.error();
  return std::move(tile->data);
}

void FragmentMetadata::Prefetch() const {
  if (prefetched_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> once(prefetch_mu_);
  if (prefetched_.load(std::memory_order_relaxed)) return;
  PrefetchOnce();
  prefetched_.store(true, std::memory_order_release);
}

void FragmentMetadata::PrefetchOnce() const {
  {
    if (!HasFragmentFooter(footer_.version)) return;  // legacy: sections preset
    std::optional<uint64_t> size;
    {
      std::lock_guard<std::mutex> lock(mu_);
      size = meta_file_size_;
    }
    if (size && *size > kWholeFileBytes) return;
    // Size and bytes from one open of the file.
    Result<SmallFile> file = storage_->ReadIfSmall(metadata_file(), kWholeFileBytes);
    if (!file.ok()) return;  // the accessors report it
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!meta_file_size_) meta_file_size_ = file->size;
    }
    if (!file->bytes) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      whole_file_ = std::make_shared<const ByteVec>(std::move(*file->bytes));
    }
    // Errors are left for the accessors: a failed load leaves its slot empty.
    auto field = [&](FieldRef f, bool var, bool nullable) {
      if (FieldIndex(f) < 0) return;
      (void)TileListOnce(TileList::kOffsets, f);
      if (var) {
        (void)TileListOnce(TileList::kVarOffsets, f);
        (void)TileListOnce(TileList::kVarSizes, f);
      }
      if (nullable && HasValiditySections(footer_.version)) {
        (void)TileListOnce(TileList::kValidityOffsets, f);
      }
    };
    const ArraySchema& s = *schema_;
    for (uint32_t i = 0; i < s.attributes.size(); ++i) {
      field(FieldRef::Attribute(i), s.attributes[i].var(), s.attributes[i].nullable);
    }
    for (uint32_t i = 0; i < s.dimensions.size(); ++i) {
      field(FieldRef::Dimension(i), s.dimensions[i].var(), false);
    }
    for (FieldRef f : {FieldRef::Coords(), FieldRef::Timestamps(), FieldRef::DeleteTimestamps(),
                       FieldRef::DeleteConditionIndex()}) {
      field(f, false, false);
    }
    (void)MbrsOnce();
    (void)ProcessedConditionsOnce();
    std::lock_guard<std::mutex> lock(mu_);
    whole_file_.reset();
  }
}

FragmentMetadata::TilePositions FragmentMetadata::List(TileList which, FieldRef f) const {
  Prefetch();
  return TileListOnce(which, f);
}

FragmentMetadata::TilePositions FragmentMetadata::TileListOnce(TileList which, FieldRef f) const {
  // Indexed by TileList: the footer's section offsets, the list's name.
  struct Source {
    std::vector<uint64_t> FragmentFooter::*offsets;
    const char* name;
  };
  static constexpr Source kSources[kTileLists] = {
      {&FragmentFooter::tile_offsets_offsets, "tile offsets"},
      {&FragmentFooter::tile_var_offsets_offsets, "tile var offsets"},
      {&FragmentFooter::tile_var_sizes_offsets, "tile var sizes"},
      {&FragmentFooter::tile_validity_offsets_offsets, "tile validity offsets"},
  };
  const Source& source = kSources[static_cast<size_t>(which)];
  ASSIGN_OR_RETURN(int i, CheckedIndex(f));
  if (which == TileList::kValidityOffsets && !HasValiditySections(footer_.version)) {
    return Error::NotFound(
        fmt::format("{}: format {} fragments have no validity tiles", dir_, footer_.version));
  }
  return LoadTileList(
      Slots().tile_list(which, i), footer_.*source.offsets, i,
      fmt::format("{} of {}", source.name, FieldName(f)), metadata_file(), tile_num(),
      [this](uint64_t at, const std::string& what) { return ReadSection(at, what); });
}

Result<const std::vector<std::vector<Range>>*> FragmentMetadata::Mbrs() const {
  Prefetch();
  return MbrsOnce();
}

Result<const std::vector<std::vector<Range>>*> FragmentMetadata::MbrsOnce() const {
  return GetOnce(Slots().mbrs, [&]() -> Result<std::vector<std::vector<Range>>> {
    const uint64_t at = footer_.rtree_offset;
    const std::string ctx = fmt::format("{}: R-tree (generic tile at {})", metadata_file(), at);
    ASSIGN_OR_RETURN(ByteVec data, ReadSection(at, "R-tree"));
    ASSIGN_OR_RETURN_CTX(auto leaves, ParseRTreeLeaves(data, 0, *schema_, footer_.version), ctx);
    if (!footer_.dense && leaves.size() != footer_.sparse_tile_num) {
      return Error::Corrupt(fmt::format("{}: {} MBRs for a fragment of {} tiles", ctx,
                                        leaves.size(), footer_.sparse_tile_num));
    }
    return leaves;
  });
}

Result<const TileStats*> FragmentMetadata::Stats(FieldRef f) const {
  ASSIGN_OR_RETURN(int i, CheckedIndex(f));
  if (!HasTileMetadata(footer_.version)) {
    return Error::NotFound(
        fmt::format("{}: format {} fragments have no tile statistics", dir_, footer_.version));
  }
  return GetOnce(Slots().stats[i], [&]() -> Result<TileStats> {
    bool var = false;
    uint64_t cell_size = 8;
    switch (f.kind) {
      case FieldRef::Kind::kAttribute:
        var = schema_->attributes[f.index].var();
        cell_size = schema_->attributes[f.index].cell_size();
        break;
      case FieldRef::Kind::kDimension:
        var = schema_->dimensions[f.index].var();
        cell_size = CoordSize(schema_->dimensions[f.index]);
        break;
      case FieldRef::Kind::kCoords:
        // TileDB sizes the zipped-coords slot as dimension count times the
        // coord size of dimension 0 (its ArraySchema::cell_size), even when
        // the dimensions differ.
        cell_size = schema_->dimensions.size() * CoordSize(schema_->dimensions[0]);
        break;
      default:
        break;  // t, dt, dci: uint64
    }
    const std::string name = FieldName(f);
    const std::string file = metadata_file();
    auto ctx = [&](std::string_view what, uint64_t at) {
      return fmt::format("{}: {} of {} (generic tile at {})", file, what, name, at);
    };
    auto check_count = [&](uint64_t count, std::string_view what, uint64_t at) -> Status {
      if (count != 0 && count != tile_num()) {
        return Error::Corrupt(fmt::format("{}: {} values for a fragment of {} tiles", ctx(what, at),
                                          count, tile_num()));
      }
      return Ok();
    };
    TileStats stats;
    const uint64_t min_at = footer_.tile_min_offsets[i];
    ASSIGN_OR_RETURN(ByteVec min_data, ReadSection(min_at, "tile mins"));
    ASSIGN_OR_RETURN_CTX(stats.mins, ParseTileMinMax(min_data, 0, var, cell_size, "tile mins"),
                         ctx("tile mins", min_at));
    TRY(check_count(stats.mins.size(), "tile mins", min_at));
    const uint64_t max_at = footer_.tile_max_offsets[i];
    ASSIGN_OR_RETURN(ByteVec max_data, ReadSection(max_at, "tile maxes"));
    ASSIGN_OR_RETURN_CTX(stats.maxs, ParseTileMinMax(max_data, 0, var, cell_size, "tile maxes"),
                         ctx("tile maxes", max_at));
    TRY(check_count(stats.maxs.size(), "tile maxes", max_at));
    const uint64_t sum_at = footer_.tile_sum_offsets[i];
    ASSIGN_OR_RETURN(ByteVec sum_data, ReadSection(sum_at, "tile sums"));
    ASSIGN_OR_RETURN_CTX(stats.sums, ParseUint64List(sum_data, 0, "tile sums"),
                         ctx("tile sums", sum_at));
    TRY(check_count(stats.sums.size(), "tile sums", sum_at));
    const uint64_t nc_at = footer_.tile_null_count_offsets[i];
    ASSIGN_OR_RETURN(ByteVec nc_data, ReadSection(nc_at, "tile null counts"));
    ASSIGN_OR_RETURN_CTX(stats.null_counts, ParseUint64List(nc_data, 0, "tile null counts"),
                         ctx("tile null counts", nc_at));
    TRY(check_count(stats.null_counts.size(), "tile null counts", nc_at));
    return stats;
  });
}

Result<const std::vector<FragmentStats>*> FragmentMetadata::FragmentStatistics() const {
  if (!HasFragmentStatistics(footer_.version)) {
    return Error::NotFound(
        fmt::format("{}: format {} fragments have no fragment statistics", dir_, footer_.version));
  }
  return GetOnce(Slots().fragment_stats, [&]() -> Result<std::vector<FragmentStats>> {
    const uint64_t at = footer_.fragment_min_max_sum_null_count_offset;
    ASSIGN_OR_RETURN(ByteVec data, ReadSection(at, "fragment statistics"));
    ASSIGN_OR_RETURN_CTX(
        auto stats, ParseFragmentStats(data, 0, FieldCount()),
        fmt::format("{}: fragment statistics (generic tile at {})", metadata_file(), at));
    return stats;
  });
}

Result<const std::vector<std::string>*> FragmentMetadata::ProcessedConditions() const {
  Prefetch();
  return ProcessedConditionsOnce();
}

Result<const std::vector<std::string>*> FragmentMetadata::ProcessedConditionsOnce() const {
  if (!HasProcessedConditions(footer_.version)) {
    static const std::vector<std::string> kNone;
    return &kNone;
  }
  return GetOnce(Slots().processed_conditions, [&]() -> Result<std::vector<std::string>> {
    const uint64_t at = footer_.processed_conditions_offset;
    ASSIGN_OR_RETURN(ByteVec data, ReadSection(at, "processed conditions"));
    ASSIGN_OR_RETURN_CTX(
        auto conditions, ParseProcessedConditions(data, 0),
        fmt::format("{}: processed conditions (generic tile at {})", metadata_file(), at));
    return conditions;
  });
}

Result<FragmentMetadata::TileLocation> FragmentMetadata::Locate(
    const std::vector<uint64_t>& offsets, uint64_t file_size, uint64_t tile, std::string_view what,
    FieldRef f) const {
  if (tile >= offsets.size()) {
    return Error::InvalidArgument(fmt::format("{}: {} tile {} of {}: it has {} tiles", dir_, what,
                                              tile, FieldName(f), offsets.size()));
  }
  const uint64_t start = offsets[tile];
  const uint64_t end = tile + 1 < offsets.size() ? offsets[tile + 1] : file_size;
  if (start > end || end > file_size) {
    return Error::Corrupt(fmt::format(
        "{}: {} tile {} of {} spans [{}, {}) outside its file of {} bytes (or backwards)",
        metadata_file(), what, tile, FieldName(f), start, end, file_size));
  }
  return TileLocation{start, end - start};
}

bool FragmentMetadata::OnlyTile(uint64_t tile) const {
  return tile == 0 && tile_num() == 1 && HasFragmentFooter(footer_.version);
}

Result<FragmentMetadata::TileLocation> FragmentMetadata::FixedTile(FieldRef f,
                                                                   uint64_t tile) const {
  ASSIGN_OR_RETURN(int i, CheckedIndex(f));
  if (OnlyTile(tile)) return TileLocation{0, footer_.file_sizes[i]};
  ASSIGN_OR_RETURN(const std::vector<uint64_t>* offsets, TileOffsets(f));
  return Locate(*offsets, footer_.file_sizes[i], tile, "data", f);
}

Result<FragmentMetadata::TileLocation> FragmentMetadata::VarTile(FieldRef f, uint64_t tile) const {
  ASSIGN_OR_RETURN(int i, CheckedIndex(f));
  if (OnlyTile(tile)) return TileLocation{0, footer_.file_var_sizes[i]};
  ASSIGN_OR_RETURN(const std::vector<uint64_t>* offsets, TileVarOffsets(f));
  return Locate(*offsets, footer_.file_var_sizes[i], tile, "var", f);
}

Result<FragmentMetadata::TileLocation> FragmentMetadata::ValidityTile(FieldRef f,
                                                                      uint64_t tile) const {
  ASSIGN_OR_RETURN(int i, CheckedIndex(f));
  if (OnlyTile(tile) && HasValiditySections(footer_.version)) {
    return TileLocation{0, footer_.file_validity_sizes[i]};
  }
  ASSIGN_OR_RETURN(const std::vector<uint64_t>* offsets, TileValidityOffsets(f));
  return Locate(*offsets, footer_.file_validity_sizes[i], tile, "validity", f);
}

}  // namespace tiledbfs::core
