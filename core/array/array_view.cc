#include "core/array/array_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "core/read/coords.h"

namespace tiledbfs::core {

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
    index_ = std::move(built).value();
  }
  return &*index_;
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
  return !index_;
}

Result<const CellIndex*> ArrayView::StoredTilesIndex() const {
  if (!IndexlessStored()) return Index();
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
  ASSIGN_OR_RETURN(const CellIndex* index, Index());
  if (index->cell_count == 0) return std::vector<Range>{};
  return index->box;
}

Result<Column> ArrayView::ReadField(const std::string& name) const {
  ASSIGN_OR_RETURN(const CellIndex* index, Index());
  return ReadFieldRange(name, 0, index->cell_count);
}

Result<Column> ArrayView::ReadFieldRange(const std::string& name, uint64_t first, uint64_t count,
                                         ReadState* state, uint8_t* into, Pieces* pieces) const {
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
  return GatherAttribute(Inputs(), *index, name, first, count, *cache_, state, into, pieces);
}

Result<std::optional<std::vector<uint64_t>>> ArrayView::CountDimensionValues(
    const std::string& name, std::span<const uint64_t> bounds) const {
  const int d = schema_->DimensionIndex(name);
  if (d < 0) return Error::NotFound(fmt::format("no dimension '{}'", name));
  if (schema_->dense()) return std::optional<std::vector<uint64_t>>();
  if (IndexlessStored()) {
    return CountStoredDimensionValues(Inputs(), static_cast<size_t>(d), bounds);
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
  ASSIGN_OR_RETURN(StoredOrder order, StoredOrder::Make(*index, tile_cells, chunk_cells));
  return std::optional<StoredOrder>(std::move(order));
}

Result<std::vector<Column>> ArrayView::ReadStoredChunk(
    const StoredOrder& order, size_t k, const std::vector<std::string>& names) const {
  if (k >= order.chunks()) {
    return Error::InvalidArgument(fmt::format("stored chunk {} of {}", k, order.chunks()));
  }
  const CellIndex chunk = order.Chunk(k);
  std::vector<Column> out;
  out.reserve(names.size());
  for (const std::string& name : names) {
    ASSIGN_OR_RETURN(Column c,
                     GatherAttribute(Inputs(), chunk, name, 0, chunk.cell_count, *cache_));
    out.push_back(std::move(c));
  }
  if (OverBudget(names)) {
    for (size_t t : order.Finish(k)) DropTile(chunk, t, names);
  }
  return out;
}

size_t ArrayView::ReleaseTiles(const std::vector<std::string>& names, uint64_t from,
                               uint64_t to) const {
  if (schema_->dense() || from >= to) return 0;
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
