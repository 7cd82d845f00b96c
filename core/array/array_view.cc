#include "core/array/array_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>

#include "core/read/coords.h"
#include "core/read/dense_index.h"
#include "core/read/packed_index.h"
#include "core/read/sparse_index.h"
#include "core/util/byte_reader.h"
#include "core/util/byte_writer.h"

namespace tiledbfs::core {
namespace {

// Appends the cells of `from` to `to` (the same field).
void AppendColumn(Column& to, const Column& from) {
  AppendBytes(to.data, from.data.data(), from.data.size());
  if (to.var() && !from.offsets.empty()) {
    const uint64_t base = to.offsets.empty() ? 0 : to.offsets.back();
    if (to.offsets.empty()) to.offsets.push_back(0);
    for (size_t i = 1; i < from.offsets.size(); ++i) to.offsets.push_back(base + from.offsets[i]);
  }
  AppendBytes(to.validity, from.validity.data(), from.validity.size());
  to.cell_count += from.cell_count;
}

}  // namespace

const ViewInputs& ArrayView::Inputs() const {
  if (source_) {
    std::call_once(gathered_, [this] {
      // Written only here, before any reader can see the fragments.
      in_.fragments = source_();
    });
  }
  return in_;
}

Result<const CellIndex*> ArrayView::Index() const {
  const ViewInputs& in = Inputs();
  std::lock_guard<std::mutex> lock(mu_);
  if (!index_) {
    Result<CellIndex> built = schema_->dense() ? BuildDenseIndex(in) : BuildSparseIndex(in);
    if (!built.ok()) return built.error();
    // Sizes already given from the stored cells must hold (KeepsEveryStoredCell).
    if (stored_ && stored_->cell_count != built->cell_count) {
      return Error::Corrupt(fmt::format(
          "the fragments hold {} cells but the view {}: a fragment holds duplicate coordinates",
          stored_->cell_count, built->cell_count));
    }
    // As must a count the persistent index gave (RestoreCounts): never sizes
    // of other cells.
    if (saved_cells_ && *saved_cells_ != built->cell_count) {
      return Error::Corrupt(
          fmt::format("the index kept {} cells for this view, its fragments hold {}: a stale entry",
                      *saved_cells_, built->cell_count));
    }
    index_ = std::move(built).value();
  }
  return &*index_;
}

Result<const SparseWindows*> ArrayView::Windows() const {
  const SparseWindows* none = nullptr;
  if (schema_->dense()) return none;
  const ViewInputs& in = Inputs();
  std::lock_guard<std::mutex> lock(mu_);
  if (!windows_) {
    if (index_) return none;
    ASSIGN_OR_RETURN(std::unique_ptr<SparseWindows> w,
                     in.window_owner == nullptr
                         ? SparseWindows::Make(in, in.index_window_cells)
                         : SparseWindows::Make(in, in.index_window_cells, false));
    windows_ = std::move(w);
  }
  return windows_->get();
}

std::string ArrayView::Identity() const {
  const ViewInputs& in = Inputs();
  std::string out =
      fmt::format("schema {} {}\ninstant {} timestamp {} filter {} dedup {}\n", schema_->name,
                  schema_->version, instant_, in.timestamp, in.filter_timestamps, in.dedup);
  auto hex = [](const ByteVec& b) {
    std::string h;
    for (uint8_t c : b) h += fmt::format("{:02x}", c);
    return h;
  };
  for (size_t d = 0; d < in.subarray.size(); ++d) {
    if (in.subarray[d]) {
      out += fmt::format("slice {} {} {}\n", d, hex(in.subarray[d]->lo), hex(in.subarray[d]->hi));
    }
  }
  for (const DeleteRule& r : in.deletes)
    out += fmt::format("delete {} {}\n", r.marker, r.timestamp);
  for (const auto& f : in.fragments) out += FragmentIdentity(*f);
  return out;
}

std::string FragmentIdentity(const FragmentMetadata& f) {
  const FragmentFooter& ft = f.footer();
  return fmt::format("fragment {} {} {} {} {} {} {} {} {} {}\n", f.name().name, ft.version,
                     ft.footer_size, ft.sparse_tile_num, ft.last_tile_cell_num, ft.rtree_offset,
                     fmt::join(ft.file_sizes, ","), fmt::join(ft.file_var_sizes, ","),
                     fmt::join(ft.file_validity_sizes, ","),
                     fmt::join(ft.tile_offsets_offsets, ","));
}

namespace {

// A sparse view indexed whole keeps its cell count alone: this format
// number, then the count (SparseWindows' saved counts start with theirs, 1).
constexpr uint32_t kWholeCountFormat = 0x43454c4c;

}  // namespace

std::string ArrayView::SaveCounts() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (windows_ && *windows_) return (*windows_)->SaveCounts();
  if (schema_->dense() || !index_) return "";
  ByteWriter w;
  w.Put<uint32_t>(kWholeCountFormat).Put<uint64_t>(index_->cell_count);
  return std::string(reinterpret_cast<const char*>(w.bytes().data()), w.size());
}

Status ArrayView::RestoreCounts(std::string_view saved) const {
  ASSIGN_OR_RETURN(const SparseWindows* windows, Windows());
  if (windows != nullptr) return windows->RestoreCounts(saved);
  if (schema_->dense()) return Ok();
  ByteReader r(AsBytes(saved));
  Result<uint32_t> format = r.Read<uint32_t>("format");
  if (!format.ok() || *format != kWholeCountFormat) return Ok();
  ASSIGN_OR_RETURN(uint64_t cells, r.Read<uint64_t>("cell count"));
  if (r.remaining() != 0) return Error::Corrupt("saved cell count: bytes after it");
  std::lock_guard<std::mutex> lock(mu_);
  if (index_ && index_->cell_count != cells) {
    return Error::Corrupt(
        fmt::format("saved cell count {}: the view holds {}", cells, index_->cell_count));
  }
  saved_cells_ = cells;
  return Ok();
}

bool ArrayView::Counted() const {
  Result<const SparseWindows*> windows = Windows();
  return !windows.ok() || *windows == nullptr || (*windows)->Counted();
}

Result<size_t> ArrayView::TakeCountsBefore(std::string_view base, Bytes row) const {
  ASSIGN_OR_RETURN(const SparseWindows* windows, Windows());
  if (windows == nullptr || base.empty()) return size_t{0};
  const Datatype type = schema_->dimensions[0].type;
  if (!Packable(type) || row.size() != DatatypeSize(type)) return size_t{0};
  return windows->TakeCountsBefore(base, OrderedValue(type, row.data()));
}

std::shared_ptr<const ArrayView> ArrayView::WithIndexWindow(uint64_t cells,
                                                            const void* owner) const {
  ViewInputs in = Inputs();
  in.index_window_cells = cells;
  if (owner != nullptr) in.window_owner = owner;
  return std::make_shared<const ArrayView>(schema_, std::move(in), instant_, cache_);
}

std::shared_ptr<const ArrayView> ArrayView::WithSubarray(Subarray subarray) const {
  ViewInputs in = Inputs();
  // A sparse box holding every fragment's cells is the whole view: served
  // as such, with no cell to check against the box.
  bool everything = !schema_->dense();
  for (const auto& f : in.fragments) {
    if (!everything) break;
    const FragmentFooter& ft = f->footer();
    everything = f->tile_num() == 0 ||
                 (!ft.null_non_empty_domain && BoxWithin(*schema_, subarray, ft.non_empty_domain));
  }
  if (!everything) in.subarray = std::move(subarray);
  return std::make_shared<const ArrayView>(schema_, std::move(in), instant_, cache_);
}

Result<size_t> ArrayView::IndexWindows() const {
  ASSIGN_OR_RETURN(const SparseWindows* windows, Windows());
  return windows == nullptr ? 0 : windows->windows();
}

Status ArrayView::CheckStoredCells(uint64_t view_cells) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (stored_ && stored_->cell_count != view_cells) {
    return Error::Corrupt(fmt::format(
        "the fragments hold {} cells but the view {}: a fragment holds duplicate coordinates",
        stored_->cell_count, view_cells));
  }
  return Ok();
}

bool ArrayView::KeepsEveryStoredCell() const {
  const ViewInputs& in = Inputs();
  std::lock_guard<std::mutex> lock(mu_);
  if (!keeps_every_) keeps_every_ = core::KeepsEveryStoredCell(in);
  return *keeps_every_;
}

bool ArrayView::IndexlessStored() const {
  if (!KeepsEveryStoredCell()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  // Once the view's own cells are known (the index built, or every window
  // counted), they are the count.
  return !index_ && !(windows_ && *windows_ && (*windows_)->Counted());
}

Result<const CellIndex*> ArrayView::StoredTilesIndex() const {
  if (!IndexlessStored()) {
    ASSIGN_OR_RETURN(const SparseWindows* windows, Windows());
    if (windows != nullptr) return &windows->tiles();
    return Index();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (index_) return &*index_;
  if (!stored_) {
    Result<CellIndex> built = BuildStoredIndex(Inputs());
    if (!built.ok()) return built.error();
    stored_ = std::move(built).value();
  }
  return &*stored_;
}

Result<uint64_t> ArrayView::CellCount() const {
  if (!IndexlessStored()) {
    ASSIGN_OR_RETURN(const SparseWindows* windows, Windows());
    if (windows != nullptr) return windows->CellCount();
    // Counted on an earlier mount (RestoreCounts): no index to build yet.
    std::lock_guard<std::mutex> lock(mu_);
    if (!index_ && saved_cells_) return *saved_cells_;
  }
  ASSIGN_OR_RETURN(const CellIndex* index, StoredTilesIndex());
  return index->cell_count;
}

Result<std::vector<uint64_t>> ArrayView::Shape() const {
  if (!schema_->dense()) {
    ASSIGN_OR_RETURN(uint64_t cells, CellCount());
    return std::vector<uint64_t>{cells};
  }
  ASSIGN_OR_RETURN(const CellIndex* index, Index());
  if (index->cell_count == 0) return std::vector<uint64_t>(schema_->dimensions.size(), 0);
  return index->shape;
}

Result<std::vector<Range>> ArrayView::NonEmptyDomain() const {
  ASSIGN_OR_RETURN(const SparseWindows* windows, Windows());
  if (windows != nullptr) {
    ASSIGN_OR_RETURN(std::vector<Range> box, windows->Box());
    ASSIGN_OR_RETURN(uint64_t cells, windows->CellCount());
    TRY(CheckStoredCells(cells));
    return box;
  }
  ASSIGN_OR_RETURN(const CellIndex* index, Index());
  if (index->cell_count == 0) return std::vector<Range>{};
  return index->box;
}

Result<Column> ArrayView::ReadField(const std::string& name) const {
  // The view's own cells (its index's), not a count from the fragments.
  ASSIGN_OR_RETURN(const SparseWindows* windows, Windows());
  if (windows != nullptr) {
    ASSIGN_OR_RETURN(uint64_t cells, windows->CellCount());
    return ReadWindowed(*windows, name, 0, cells, nullptr, nullptr, nullptr);
  }
  ASSIGN_OR_RETURN(const CellIndex* index, Index());
  return ReadFieldRange(name, 0, index->cell_count);
}

Result<Column> ArrayView::ReadFieldRange(const std::string& name, uint64_t first, uint64_t count,
                                         ReadState* state, uint8_t* into, Pieces* pieces) const {
  ASSIGN_OR_RETURN(const SparseWindows* windows, Windows());
  if (windows != nullptr) return ReadWindowed(*windows, name, first, count, state, into, pieces);
  ASSIGN_OR_RETURN(const CellIndex* index, Index());
  if (first > index->cell_count || count > index->cell_count - first) {
    return Error::InvalidArgument(
        fmt::format("{}: cells [{}, +{}) of {}", name, first, count, index->cell_count));
  }
  int d = schema_->DimensionIndex(name);
  if (d >= 0) {
    if (schema_->dense()) return DenseDimensionColumn(*schema_, *index, d, first, count);
    return SparseDimensionColumn(*schema_, *index, d, first, count);
  }
  const ViewInputs& in = Inputs();
  return GatherAttribute({in, *index, *cache_, state}, name, first, count, {into, pieces});
}

Result<Column> ArrayView::ReadWindowed(const SparseWindows& windows, const std::string& name,
                                       uint64_t first, uint64_t count, ReadState* state,
                                       uint8_t* into, Pieces* pieces) const {
  ASSIGN_OR_RETURN(uint64_t cells, CellCount());
  if (first > cells || count > cells - first) {
    return Error::InvalidArgument(
        fmt::format("{}: cells [{}, +{}) of {}", name, first, count, cells));
  }
  const int d = schema_->DimensionIndex(name);
  const ViewInputs& in = Inputs();
  auto read = [&](const CellIndex& index, uint64_t at, uint64_t n, uint8_t* to) {
    // A window of runs (run_index.h) holds no coordinates: they are
    // gathered from their tiles as attributes are.
    const bool from_index = index.packing || !index.dims.empty() || index.runs.empty();
    if (d >= 0 && from_index) {
      return Result<Column>(SparseDimensionColumn(*schema_, index, d, at, n));
    }
    return GatherAttribute({in, index, *cache_, state}, name, at, n, {to, pieces});
  };
  if (count == 0) return read(windows.tiles(), 0, 0, into);
  Column out;
  uint64_t done = 0, cell_size = 0;
  std::shared_ptr<const CellIndex> last;
  while (done < count) {
    Result<SparseWindows::Part> part = windows.Locate(first + done);
    if (!part.ok()) {
      // Past the windows' cells, inside the cells the fragments hold.
      if (part.error().code() == ErrorCode::kInvalidArgument) {
        ASSIGN_OR_RETURN(uint64_t view_cells, windows.CellCount());
        TRY(CheckStoredCells(view_cells));
      }
      return part.error();
    }
    const uint64_t at = first + done - part->first;
    const uint64_t n = std::min(count - done, part->index->cell_count - at);
    ASSIGN_OR_RETURN(Column c, read(*part->index, at, n, into ? into + done * cell_size : nullptr));
    if (done == 0) {
      out = std::move(c);
      cell_size = out.cell_size();
    } else {
      AppendColumn(out, c);
    }
    done += n;
    last = std::move(part->index);
  }
  if (state != nullptr) state->window = std::move(last);
  if (first + count == cells) {
    ASSIGN_OR_RETURN(uint64_t view_cells, windows.CellCount());
    TRY(CheckStoredCells(view_cells));
  }
  return out;
}

Result<std::optional<std::vector<uint64_t>>> ArrayView::CountDimensionValues(
    const std::string& name, std::span<const uint64_t> bounds) const {
  const int d = schema_->DimensionIndex(name);
  if (d < 0) return Error::NotFound(fmt::format("no dimension '{}'", name));
  if (schema_->dense()) return std::optional<std::vector<uint64_t>>();
  if (IndexlessStored()) {
    return CountStoredDimensionValues(Inputs(), static_cast<size_t>(d), bounds);
  }
  ASSIGN_OR_RETURN(const SparseWindows* windows, Windows());
  if (windows != nullptr) {
    std::vector<uint64_t> total(bounds.size() + 1, 0);
    bool packed = true;
    const Datatype type = schema_->dimensions[d].type;
    TRY(windows->ForEach([&](const CellIndex& part) -> Status {
      std::optional<std::vector<uint64_t>> counts =
          core::CountDimensionValues(part, static_cast<size_t>(d), bounds);
      if (!counts && !part.runs.empty() && Packable(type)) {
        // A window of runs (run_index.h): its coordinates from their tiles.
        ASSIGN_OR_RETURN(Column c,
                         GatherAttribute({Inputs(), part, *cache_}, name, 0, part.cell_count));
        const uint64_t size = DatatypeSize(type);
        if (c.data.size() != part.cell_count * size) {
          return Error::Corrupt(fmt::format("dimension '{}': {} bytes for {} cells", name,
                                            c.data.size(), part.cell_count));
        }
        counts.emplace(bounds.size() + 1, 0);
        for (uint64_t i = 0; i < part.cell_count; ++i) {
          const uint64_t v = OrderedValue(type, c.data.data() + i * size);
          ++(*counts)[std::upper_bound(bounds.begin(), bounds.end(), v) - bounds.begin()];
        }
      }
      if (!counts) packed = false;
      for (size_t i = 0; counts && i < total.size(); ++i) total[i] += (*counts)[i];
      return Ok();
    }));
    if (!packed) return std::optional<std::vector<uint64_t>>();
    return std::optional<std::vector<uint64_t>>(std::move(total));
  }
  ASSIGN_OR_RETURN(const CellIndex* index, Index());
  return core::CountDimensionValues(*index, static_cast<size_t>(d), bounds);
}

Result<std::optional<StoredOrder>> ArrayView::StoredChunks(uint64_t chunk_cells) const {
  if (schema_->dense()) return std::optional<StoredOrder>();
  ASSIGN_OR_RETURN(const CellIndex* index, StoredTilesIndex());
  const ViewInputs& in = Inputs();
  std::vector<uint64_t> tile_cells;
  tile_cells.reserve(index->sparse_tiles.size());
  for (const CellIndex::SparseTile& t : index->sparse_tiles) {
    if (t.fragment >= in.fragments.size()) {
      return Error::Corrupt(
          fmt::format("view tile of fragment {} of {}", t.fragment, in.fragments.size()));
    }
    tile_cells.push_back(in.fragments[t.fragment]->TileCellNum(t.tile));
  }
  ASSIGN_OR_RETURN(const SparseWindows* windows,
                   IndexlessStored() ? Result<const SparseWindows*>(nullptr) : Windows());
  if (windows != nullptr) {
    ASSIGN_OR_RETURN(uint64_t cells, windows->CellCount());
    ASSIGN_OR_RETURN(StoredOrder order, StoredOrder::Make(*index, cells, tile_cells, chunk_cells,
                                                          [windows](const auto& each) {
                                                            return windows->ForEach(each);
                                                          }));
    return std::optional<StoredOrder>(std::move(order));
  }
  ASSIGN_OR_RETURN(StoredOrder order, StoredOrder::Make(*index, tile_cells, chunk_cells));
  return std::optional<StoredOrder>(std::move(order));
}

Result<std::vector<Column>> ArrayView::ReadStoredChunk(
    const StoredOrder& order, size_t k, const std::vector<std::string>& names) const {
  if (k >= order.chunks()) {
    return Error::InvalidArgument(fmt::format("stored chunk {} of {}", k, order.chunks()));
  }
  const CellIndex chunk = order.Chunk(k);
  const ViewInputs& in = Inputs();
  std::vector<Column> out;
  out.reserve(names.size());
  for (const std::string& name : names) {
    ASSIGN_OR_RETURN(Column c, GatherAttribute({in, chunk, *cache_}, name, 0, chunk.cell_count));
    out.push_back(std::move(c));
  }
  if (OverBudget(names)) {
    for (size_t t : order.Finish(k)) DropTile(chunk, t, names);
  }
  return out;
}

void ArrayView::LetGoOfWindows() const {
  const SparseWindows* windows = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (windows_ && *windows_) windows = windows_->get();
  }
  // Outside mu_: LetGo waits for a build, which may look at the view.
  if (windows != nullptr) windows->LetGo();
}

size_t ArrayView::ReleaseTiles(const std::vector<std::string>& names, uint64_t from,
                               uint64_t to) const {
  if (schema_->dense() || from >= to) return 0;
  auto windows = Windows();
  if (windows.ok() && *windows != nullptr) {
    if (!OverBudget(names)) return 0;
    size_t dropped = 0;
    for (size_t t : (*windows)->TilesEndingIn(from, to)) {
      dropped += DropTile((*windows)->tiles(), t, names);
    }
    return dropped;
  }
  auto index = Index();
  if (!index.ok() || !OverBudget(names)) return 0;
  std::vector<size_t> done;
  {
    std::lock_guard<std::mutex> lock(release_mu_);
    if (!tile_ends_) {
      const std::vector<uint64_t> ends = TileEnds(Inputs(), **index);
      std::vector<std::pair<uint64_t, size_t>> by_end;
      by_end.reserve(ends.size());
      for (size_t t = 0; t < ends.size(); ++t) {
        if (ends[t] != UINT64_MAX) by_end.emplace_back(ends[t], t);
      }
      std::sort(by_end.begin(), by_end.end());
      tile_ends_ = std::move(by_end);
    }
    // Tiles ending in (from, to].
    auto it = std::upper_bound(tile_ends_->begin(), tile_ends_->end(),
                               std::pair<uint64_t, size_t>(from, SIZE_MAX));
    for (; it != tile_ends_->end() && it->first <= to; ++it) done.push_back(it->second);
  }
  size_t dropped = 0;
  for (size_t t : done) dropped += DropTile(**index, t, names);
  return dropped;
}

bool ArrayView::OverBudget(const std::vector<std::string>& names) const {
  auto index = StoredTilesIndex();
  if (!index.ok() || schema_->dense()) return false;
  std::lock_guard<std::mutex> lock(release_mu_);
  uint64_t bytes = 0;
  for (const std::string& name : names) {
    auto it = tile_bytes_.find(name);
    if (it == tile_bytes_.end()) {
      it = tile_bytes_.emplace(name, AttributeTileBytes(Inputs(), **index, name)).first;
    }
    bytes = it->second > UINT64_MAX - bytes ? UINT64_MAX : bytes + it->second;
  }
  return bytes > cache_->budget_bytes();
}

size_t ArrayView::DropTile(const CellIndex& index, size_t t,
                           const std::vector<std::string>& names) const {
  const ViewInputs& in = Inputs();
  if (t >= index.sparse_tiles.size()) return 0;
  const CellIndex::SparseTile& st = index.sparse_tiles[t];
  if (st.fragment >= in.fragments.size()) return 0;
  const FragmentMetadata& frag = *in.fragments[st.fragment];
  size_t dropped = 0;
  for (const std::string& name : names) {
    const int va = schema_->AttributeIndex(name);
    const int a = va < 0 ? -1 : FragmentAttribute(frag, schema_->attributes[va]);
    if (a < 0) continue;
    dropped += cache_->Drop(TileKey{&frag, frag.FieldIndex(FieldRef::Attribute(a)), st.tile});
  }
  return dropped;
}

}  // namespace tiledbfs::core
