#include "core/read/coord_tiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/util/parallel.h"

namespace tiledbfs::core {

Status CheckDimensionCount(const ViewInputs& in, const FragmentMetadata& frag) {
  const size_t dims = in.schema->dimensions.size();
  if (frag.schema().dimensions.size() != dims) {
    return Error::Corrupt(fmt::format("{}: schema has {} dimensions, the array {}", frag.dir(),
                                      frag.schema().dimensions.size(), dims));
  }
  return Ok();
}

bool ZippedCoords(const FragmentMetadata& frag) {
  return !frag.dense() && frag.FieldIndex(FieldRef::Coords()) >= 0 &&
         frag.FieldIndex(FieldRef::Dimension(0)) < 0;
}

Result<std::vector<DecodedTile>> ReadCoordTiles(const FragmentMetadata& frag, uint64_t t,
                                                size_t dims, bool encrypted) {
  if (ZippedCoords(frag)) return ReadZippedCoordsTile(frag, t, encrypted);
  std::vector<DecodedTile> out;
  for (size_t d = 0; d < dims; ++d) {
    ASSIGN_OR_RETURN(DecodedTile dt, ReadTile(frag, FieldRef::Dimension(d), t, encrypted));
    out.push_back(std::move(dt));
  }
  return out;
}

std::vector<Result<std::vector<DecodedTile>>> ReadCoordTileBatch(
    const ViewInputs& in, std::span<const std::pair<uint32_t, uint64_t>> tiles, size_t dims) {
  std::vector<TileRequest> requests;
  std::vector<size_t> zipped;
  for (size_t i = 0; i < tiles.size(); ++i) {
    const FragmentMetadata& frag = *in.fragments[tiles[i].first];
    if (ZippedCoords(frag)) {
      zipped.push_back(i);
      continue;
    }
    for (size_t d = 0; d < dims; ++d) {
      requests.push_back({&frag, FieldRef::Dimension(static_cast<uint32_t>(d)), tiles[i].second});
    }
  }
  std::vector<Result<DecodedTile>> got = ReadTiles(requests, in.encrypted);
  std::vector<std::optional<Result<std::vector<DecodedTile>>>> out(tiles.size());
  ParallelFor(zipped.size(), [&](size_t k) {
    const auto& [fi, t] = tiles[zipped[k]];
    out[zipped[k]] = ReadCoordTiles(*in.fragments[fi], t, dims, in.encrypted);
  });
  size_t r = 0;
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (out[i]) continue;
    std::vector<DecodedTile> per_dim;
    std::optional<Error> failed;
    for (size_t d = 0; d < dims; ++d, ++r) {
      if (failed) continue;
      if (!got[r].ok()) {
        failed = got[r].error();
      } else {
        per_dim.push_back(std::move(got[r]).value());
      }
    }
    if (failed) {
      out[i] = *failed;
    } else {
      out[i] = std::move(per_dim);
    }
  }
  std::vector<Result<std::vector<DecodedTile>>> results;
  results.reserve(tiles.size());
  for (auto& o : out) results.push_back(std::move(*o));
  return results;
}

namespace {

// Tile `t`'s per-cell timestamps (into *stamps, when the fragment has them)
// and delete timestamps (into *deleted, when the view filters by time),
// each checked to hold `cell_num` values.
Status ReadTileStamps(const ViewInputs& in, const FragmentMetadata& frag, uint64_t t,
                      uint64_t cell_num, DecodedTile* stamps, DecodedTile* deleted) {
  const FragmentFooter& ft = frag.footer();
  if (ft.has_timestamps) {
    ASSIGN_OR_RETURN(*stamps, ReadTile(frag, FieldRef::Timestamps(), t, in.encrypted));
    if (stamps->fixed.size() != cell_num * 8) {
      return Error::Corrupt(fmt::format("{}: tile {} has {} timestamp bytes for {} cells",
                                        frag.dir(), t, stamps->fixed.size(), cell_num));
    }
  }
  if (ft.has_delete_meta && in.filter_timestamps) {
    ASSIGN_OR_RETURN(*deleted, ReadTile(frag, FieldRef::DeleteTimestamps(), t, in.encrypted));
    if (deleted->fixed.size() != cell_num * 8) {
      return Error::Corrupt(fmt::format("{}: tile {} has {} delete timestamp bytes for {} cells",
                                        frag.dir(), t, deleted->fixed.size(), cell_num));
    }
  }
  return Ok();
}

// then stay: DropDeletedCells takes them out after the dedup.
// Appends `base | p` for every cell p of a tile written by the view's
// instant (`stamps`, when filtering; null: every cell).
void AppendVisibleCells(const ViewInputs& in, const DecodedTile* stamps, uint64_t base,
                        uint64_t cell_num, std::vector<uint64_t>& cells) {
  // Written through a pointer: a push_back per cell was a call per cell.
  const size_t from = cells.size();
  cells.resize(from + cell_num);
  uint64_t* out = cells.data() + from;
  if (stamps == nullptr) {
    for (uint64_t p = 0; p < cell_num; ++p) out[p] = base | p;
    return;
  }
  size_t n = 0;
  for (uint64_t p = 0; p < cell_num; ++p) {
    uint64_t stamp;
    std::memcpy(&stamp, stamps->fixed.data() + p * 8, 8);
    out[n] = base | p;
    n += stamp <= in.timestamp ? 1 : 0;
  }
  cells.resize(from + n);
}

// Where tile gt of the order keeps its delete timestamps: a slot of
// `deleted`; null when the view does not read them.
DecodedTile* DeletedSlot(const ViewInputs& in, const FragmentFooter& ft,
                         std::vector<DecodedTile>& deleted, size_t gt, size_t tiles) {
  if (!ft.has_delete_meta || !in.filter_timestamps) return nullptr;
  if (deleted.empty()) deleted.resize(tiles);
  return &deleted[gt];
}

}  // namespace

Status AppendTileCells(const ViewInputs& in, OrderInput& order, size_t gt, DecodedTile* stamps,
                       std::vector<DecodedTile>& deleted, std::vector<uint64_t>& cells) {
  OrderTile& ot = order.tiles[gt];
  const FragmentMetadata& frag = *in.fragments[ot.fragment];
  const FragmentFooter& ft = frag.footer();
  const uint64_t cell_num = frag.TileCellNum(ot.tile);
  DecodedTile* tile_stamps = ft.has_timestamps ? stamps : nullptr;
  TRY(ReadTileStamps(in, frag, ot.tile, cell_num, tile_stamps,
                     DeletedSlot(in, ft, deleted, gt, order.tiles.size())));
  ot.stamps = tile_stamps;
  const bool filter = in.filter_timestamps && ft.has_timestamps;
  AppendVisibleCells(in, filter ? tile_stamps : nullptr, uint64_t{gt} << order.pos_bits, cell_num,
                     cells);
  return Ok();
}

const Range* TileMbr(const FragmentMetadata& frag, uint64_t t, size_t d, size_t dims) {
  const FragmentFooter& ft = frag.footer();
  if (frag.tile_num() == 1 && !ft.null_non_empty_domain && ft.non_empty_domain.size() == dims) {
    return &ft.non_empty_domain[d];
  }
  auto mbrs = frag.Mbrs();
  if (!mbrs.ok() || t >= (*mbrs)->size() || (**mbrs)[t].size() != dims) return nullptr;
  return &(**mbrs)[t][d];
}

class DeleteConditions::Values final : public CellValues {
 public:
  Values(DeleteConditions& owner, const JudgedCell& cell,
         const std::function<Bytes(size_t)>& dimension)
      : owner_(owner), cell_(cell), dimension_(dimension) {}
  const ArraySchema& schema() const override {
    return owner_.in_.fragments[cell_.fragment]->schema();
  }
  Result<std::optional<Bytes>> Value(const std::string& field) const override {
    const FragmentMetadata& frag = *owner_.in_.fragments[cell_.fragment];
    const ArraySchema& fs = frag.schema();
    if (int d = fs.DimensionIndex(field); d >= 0) {
      return std::optional<Bytes>(dimension_(static_cast<size_t>(d)));
    }
    const int a = fs.AttributeIndex(field);
    if (a < 0) return std::optional<Bytes>();
    auto key = std::make_tuple(cell_.fragment, cell_.tile, field);
    auto it = owner_.tiles_.find(key);
    if (it == owner_.tiles_.end()) {
      ASSIGN_OR_RETURN(DecodedTile t,
                       ReadTile(frag, FieldRef::Attribute(a), cell_.tile, owner_.in_.encrypted));
      if (t.cell_num != frag.TileCellNum(cell_.tile)) {
        return Error::Corrupt(fmt::format("{}: tile {} of '{}' has {} cells, expected {}",
                                          frag.dir(), cell_.tile, field, t.cell_num,
                                          frag.TileCellNum(cell_.tile)));
      }
      it = owner_.tiles_.emplace(std::move(key), std::move(t)).first;
    }
    if (!it->second.valid(cell_.pos)) return std::optional<Bytes>();
    return std::optional<Bytes>(it->second.cell(cell_.pos));
  }

 private:
  DeleteConditions& owner_;
  const JudgedCell& cell_;
  const std::function<Bytes(size_t)>& dimension_;
};

DeleteConditions::DeleteConditions(const ViewInputs& in)
    : in_(in), processed_(in.fragments.size(), nullptr) {
  for (size_t fi = 0; fi < in.fragments.size(); ++fi) {
    if (!in.fragments[fi]->footer().has_delete_meta) continue;
    auto p = in.fragments[fi]->ProcessedConditions();
    if (p.ok()) processed_[fi] = *p;
  }
}

Result<bool> DeleteConditions::Deletes(const JudgedCell& cell,
                                       const std::function<Bytes(size_t)>& dimension) {
  const FragmentMetadata& frag = *in_.fragments[cell.fragment];
  const std::vector<std::string>* processed = processed_[cell.fragment];
  Values values(*this, cell, dimension);
  for (const DeleteRule& rule : in_.deletes) {
    if (rule.timestamp < frag.name().t1) continue;
    if (processed != nullptr &&
        std::find(processed->begin(), processed->end(), rule.marker) != processed->end()) {
      continue;
    }
    if (frag.footer().has_timestamps && rule.timestamp <= frag.name().t2 &&
        cell.timestamp > rule.timestamp) {
      continue;
    }
    ASSIGN_OR_RETURN(bool m, rule.matches(values));
    if (m) return true;
  }
  return false;
}

}  // namespace tiledbfs::core
