#include "core/read/stored_order.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <span>

#include "core/read/coord_tiles.h"

namespace tiledbfs::core {

Result<StoredOrder> StoredOrder::Make(const CellIndex& index,
                                      const std::vector<uint64_t>& tile_cells,
                                      uint64_t chunk_cells) {
  return Make(
      index, index.cell_count, tile_cells, chunk_cells,
      [&index](const std::function<Status(const CellIndex&)>& each) { return each(index); });
}

Result<StoredOrder> StoredOrder::Make(const CellIndex& index, uint64_t cell_count,
                                      const std::vector<uint64_t>& tile_cells, uint64_t chunk_cells,
                                      const PartVisitor& visit) {
  if (index.dense) return Error::InvalidArgument("stored order of a dense view");
  const size_t tiles = index.sparse_tiles.size();
  if (tile_cells.size() != tiles) {
    return Error::InvalidArgument(
        fmt::format("stored order: {} tile sizes for {} tiles", tile_cells.size(), tiles));
  }
  chunk_cells = std::max<uint64_t>(chunk_cells, 1);
  StoredOrder o;
  o.index_ = &index;
  o.tile_base_.assign(tiles + 1, 0);
  for (size_t t = 0; t < tiles; ++t) {
    if (AddOverflow(o.tile_base_[t], tile_cells[t], &o.tile_base_[t + 1])) {
      return Error::Corrupt("stored order: the tiles hold more than 2^64 cells");
    }
  }
  const uint64_t total = o.tile_base_[tiles];
  // The index names distinct stored cells: as many as there are means all.
  o.all_ = cell_count == total;
  o.chunk_bit_.push_back(0);
  if (o.all_) {
    for (uint64_t at = 0; at < total; at += chunk_cells) {
      o.chunk_bit_.push_back(std::min(total, at + chunk_cells));
      o.chunk_cells_.push_back(o.chunk_bit_.back() - at);
    }
    o.CountChunks();
    return o;
  }
  const uint64_t mask = (uint64_t{1} << index.pos_bits) - 1;
  o.bits_.assign((total + 63) / 64, 0);
  uint64_t seen = 0;
  // A part may number its own tiles (a window of a sparse view): each is
  // found among the index's, which are in order of fragment and tile.
  auto before = [](const CellIndex::SparseTile& a, const CellIndex::SparseTile& b) {
    return a.fragment != b.fragment ? a.fragment < b.fragment : a.tile < b.tile;
  };
  std::vector<uint64_t> tile_of;  // per tile of the part, the index's
  TRY(visit([&](const CellIndex& part) -> Status {
    if (part.pos_bits != index.pos_bits) {
      return Error::InvalidArgument("stored order: a part of other ordinals");
    }
    tile_of.clear();
    const bool same = std::equal(
        part.sparse_tiles.begin(), part.sparse_tiles.end(), index.sparse_tiles.begin(),
        index.sparse_tiles.end(),
        [](const auto& a, const auto& b) { return a.fragment == b.fragment && a.tile == b.tile; });
    for (size_t t = 0; same && t < tiles; ++t) tile_of.push_back(t);
    for (const CellIndex::SparseTile& st :
         same ? std::span<const CellIndex::SparseTile>() : std::span(part.sparse_tiles)) {
      auto it = std::lower_bound(index.sparse_tiles.begin(), index.sparse_tiles.end(), st, before);
      if (it == index.sparse_tiles.end() || it->fragment != st.fragment || it->tile != st.tile) {
        return Error::InvalidArgument("stored order: a part on other tiles");
      }
      tile_of.push_back(static_cast<uint64_t>(it - index.sparse_tiles.begin()));
    }
    for (uint64_t i = 0; i < part.cell_count; ++i, ++seen) {
      const uint64_t ord = part.OrdinalAt(i), local = ord >> index.pos_bits;
      const uint64_t t = local < tile_of.size() ? tile_of[local] : tiles;
      if (t >= tiles || (ord & mask) >= tile_cells[t]) {
        return Error::Corrupt(
            fmt::format("view cell {}: cell {} of tile {} of {}", seen, ord & mask, t, tiles));
      }
      const uint64_t b = o.tile_base_[t] + (ord & mask);
      o.bits_[b / 64] |= uint64_t{1} << (b % 64);
    }
    return Ok();
  }));
  // Chunk boundaries: after every chunk_cells kept cells.
  uint64_t in_chunk = 0, kept = 0;
  for (size_t w = 0; w < o.bits_.size(); ++w) {
    uint64_t word = o.bits_[w];
    const uint64_t n = static_cast<uint64_t>(std::popcount(word));
    kept += n;
    if (in_chunk + n < chunk_cells) {
      in_chunk += n;
      continue;
    }
    // The chunk ends in this word (perhaps more than one does).
    for (; word != 0; word &= word - 1) {
      if (++in_chunk < chunk_cells) continue;
      o.chunk_bit_.push_back(w * 64 + static_cast<uint64_t>(std::countr_zero(word)) + 1);
      o.chunk_cells_.push_back(in_chunk);
      in_chunk = 0;
    }
  }
  if (kept != cell_count || seen != cell_count) {
    return Error::Corrupt(
        fmt::format("view of {} cells names {} distinct stored cells", cell_count, kept));
  }
  if (in_chunk > 0) {
    o.chunk_bit_.push_back(total);
    o.chunk_cells_.push_back(in_chunk);
  }
  o.CountChunks();
  return o;
}

std::pair<size_t, size_t> StoredOrder::ChunkTiles(size_t k) const {
  const size_t tiles = tile_base_.size() - 1;
  const uint64_t from = chunk_bit_[k], to = chunk_bit_[k + 1];
  // The last tile starting at or before `from` (a tile of no cells there
  // ends at `from`: not crossed), to the first starting at or after `to`.
  const size_t a = static_cast<size_t>(
      std::upper_bound(tile_base_.begin(), tile_base_.end(), from) - tile_base_.begin());
  const size_t b = static_cast<size_t>(std::lower_bound(tile_base_.begin(), tile_base_.end(), to) -
                                       tile_base_.begin());
  return {std::min(a == 0 ? 0 : a - 1, tiles), std::min(b, tiles)};
}

void StoredOrder::CountChunks() {
  const size_t tiles = tile_base_.size() - 1;
  unfinished_ = std::make_unique<std::atomic<uint32_t>[]>(tiles);
  finished_ = std::make_unique<std::atomic<bool>[]>(chunks());
  for (size_t k = 0; k < chunks(); ++k) {
    const auto [a, b] = ChunkTiles(k);
    for (size_t t = a; t < b; ++t) unfinished_[t].fetch_add(1, std::memory_order_relaxed);
  }
}

std::vector<size_t> StoredOrder::Finish(size_t k) const {
  std::vector<size_t> done;
  if (k >= chunks() || finished_[k].exchange(true)) return done;
  const auto [a, b] = ChunkTiles(k);
  for (size_t t = a; t < b; ++t) {
    if (unfinished_[t].fetch_sub(1) == 1) done.push_back(t);
  }
  return done;
}

CellIndex StoredOrder::Chunk(size_t k) const {
  CellIndex c;
  c.cell_count = chunk_cells_[k];
  c.sparse_tiles = index_->sparse_tiles;
  c.pos_bits = index_->pos_bits;
  const uint64_t from = chunk_bit_[k], to = chunk_bit_[k + 1];
  size_t t = static_cast<size_t>(std::upper_bound(tile_base_.begin(), tile_base_.end(), from) -
                                 tile_base_.begin()) -
             1;
  if (all_) {
    // Every cell of the tiles from `from` to `to`: a run per tile.
    for (uint64_t b = from; b < to; ++t) {
      const uint64_t end = std::min(to, tile_base_[t + 1]);
      if (end > b) c.runs.emplace_back(b - from, (uint64_t{t} << c.pos_bits) | (b - tile_base_[t]));
      b = end;
    }
    return c;
  }
  c.ordinals.resize(c.cell_count);
  uint64_t* out = c.ordinals.data();
  for (uint64_t w = from / 64; w * 64 < to; ++w) {
    uint64_t word = bits_[w];
    if (w == from / 64) word &= ~uint64_t{0} << (from % 64);
    if ((w + 1) * 64 > to) word &= ~uint64_t{0} >> (64 - to % 64);
    for (; word != 0; word &= word - 1) {
      const uint64_t b = w * 64 + static_cast<uint64_t>(std::countr_zero(word));
      while (tile_base_[t + 1] <= b) ++t;
      *out++ = (uint64_t{t} << c.pos_bits) | (b - tile_base_[t]);
    }
  }
  return c;
}

bool KeepsEveryStoredCell(const ViewInputs& in) {
  const ArraySchema& schema = *in.schema;
  if (schema.dense() || !in.deletes.empty() || !in.subarray.empty()) return false;
  const bool dedup = in.dedup && !schema.allows_dups;
  const size_t dims = schema.dimensions.size();
  // With dedup: each fragment's non-empty domain as OrderedValue bounds,
  // lo then hi per dimension.
  std::vector<std::vector<uint64_t>> boxes;
  for (const auto& f : in.fragments) {
    if (f->tile_num() == 0) continue;
    const FragmentFooter& ft = f->footer();
    if (ft.has_delete_meta) return false;
    if (ft.has_timestamps && (dedup || (in.filter_timestamps && f->name().t2 > in.timestamp))) {
      return false;
    }
    if (!dedup) continue;
    if (ft.null_non_empty_domain || ft.non_empty_domain.size() != dims) return false;
    std::vector<uint64_t> box(2 * dims);
    for (size_t d = 0; d < dims; ++d) {
      const Dimension& dim = schema.dimensions[d];
      const Range& r = ft.non_empty_domain[d];
      if (dim.var() || !Packable(dim.type) || r.lo.size() != DatatypeSize(dim.type) ||
          r.hi.size() != r.lo.size()) {
        return false;
      }
      box[2 * d] = OrderedValue(dim.type, r.lo.data());
      box[2 * d + 1] = OrderedValue(dim.type, r.hi.data());
    }
    boxes.push_back(std::move(box));
  }
  if (boxes.size() < 2) return true;
  // Pairwise disjoint: by the first dimension's low end, each box against
  // those starting within it along that dimension.
  std::sort(boxes.begin(), boxes.end());
  uint64_t budget = 64 * uint64_t{boxes.size()};
  for (size_t i = 0; i < boxes.size(); ++i) {
    for (size_t j = i + 1; j < boxes.size() && boxes[j][0] <= boxes[i][1]; ++j) {
      if (budget-- == 0) return false;
      bool overlap = true;
      for (size_t d = 1; d < dims && overlap; ++d) {
        overlap = boxes[j][2 * d] <= boxes[i][2 * d + 1] && boxes[i][2 * d] <= boxes[j][2 * d + 1];
      }
      if (overlap) return false;
    }
  }
  return true;
}

Result<CellIndex> BuildStoredIndex(const ViewInputs& in) {
  CellIndex index;
  uint64_t max_cells = 0;
  for (size_t fi = 0; fi < in.fragments.size(); ++fi) {
    const FragmentMetadata& frag = *in.fragments[fi];
    if (frag.tile_num() > 0) TRY(CheckDimensionCount(in, frag));
    for (uint64_t t = 0; t < frag.tile_num(); ++t) {
      const uint64_t n = frag.TileCellNum(t);
      max_cells = std::max(max_cells, n);
      if (AddOverflow(index.cell_count, n, &index.cell_count)) {
        return Error::Corrupt("the fragments hold more than 2^64 cells");
      }
      index.sparse_tiles.push_back({static_cast<uint32_t>(fi), t});
    }
  }
  index.pos_bits = BitsFor(max_cells);
  if (index.pos_bits > 32 || BitsFor(index.sparse_tiles.size()) + index.pos_bits > 63) {
    return Error::Unsupported(fmt::format("sparse view of {} tiles of up to {} cells",
                                          index.sparse_tiles.size(), max_cells));
  }
  return index;
}

Result<std::optional<std::vector<uint64_t>>> CountStoredDimensionValues(
    const ViewInputs& in, size_t d, std::span<const uint64_t> bounds) {
  const ArraySchema& schema = *in.schema;
  const size_t dims = schema.dimensions.size();
  if (d >= dims) return Error::InvalidArgument(fmt::format("dimension {} of {}", d, dims));
  const Dimension& dim = schema.dimensions[d];
  if (dim.var() || !Packable(dim.type)) return std::optional<std::vector<uint64_t>>();
  const uint64_t size = DatatypeSize(dim.type);
  const OrderedLoad load = OrderedLoadFor(dim.type);
  auto interval = [&](uint64_t v) {
    return static_cast<size_t>(std::upper_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
  };
  std::vector<uint64_t> counts(bounds.size() + 1, 0);
  // The tiles whose MBR does not settle it: their values are read.
  std::vector<std::pair<uint32_t, uint64_t>> unsettled;
  for (size_t fi = 0; fi < in.fragments.size(); ++fi) {
    const FragmentMetadata& frag = *in.fragments[fi];
    if (frag.tile_num() > 0) TRY(CheckDimensionCount(in, frag));
    for (uint64_t t = 0; t < frag.tile_num(); ++t) {
      const Range* r = TileMbr(frag, t, d, dims);
      if (r != nullptr && r->lo.size() == size && r->hi.size() == size) {
        const size_t k = interval(OrderedValue(dim.type, r->lo.data()));
        if (k == interval(OrderedValue(dim.type, r->hi.data()))) {
          counts[k] += frag.TileCellNum(t);
          continue;
        }
      }
      unsettled.emplace_back(static_cast<uint32_t>(fi), t);
    }
  }
  // A window of at most 256 tiles or about 8 MiB of values at a time,
  // their files read together (a window of 256 big tiles was 200 MB).
  constexpr size_t kWindow = 256;
  constexpr uint64_t kWindowBytes = uint64_t{8} << 20;
  for (size_t from = 0, to = 0; from < unsettled.size(); from = to) {
    uint64_t bytes = 0;
    for (to = from; to < unsettled.size() && to - from < kWindow && bytes < kWindowBytes; ++to) {
      const auto& [fi, t] = unsettled[to];
      bytes += in.fragments[fi]->TileCellNum(t) * size;
    }
    const auto window = std::span(unsettled).subspan(from, to - from);
    std::vector<TileRequest> requests;
    for (const auto& [fi, t] : window) {
      if (!ZippedCoords(*in.fragments[fi])) {
        requests.push_back(
            {in.fragments[fi].get(), FieldRef::Dimension(static_cast<uint32_t>(d)), t});
      }
    }
    std::vector<Result<DecodedTile>> got = ReadTiles(requests, in.encrypted);
    size_t r = 0;
    for (const auto& [fi, t] : window) {
      const FragmentMetadata& frag = *in.fragments[fi];
      DecodedTile tile;
      if (ZippedCoords(frag)) {
        ASSIGN_OR_RETURN(std::vector<DecodedTile> all, ReadZippedCoordsTile(frag, t, in.encrypted));
        if (all.size() != dims) {
          return Error::Corrupt(fmt::format("{}: tile {} has coordinates of {} dimensions",
                                            frag.dir(), t, all.size()));
        }
        tile = std::move(all[d]);
      } else {
        ASSIGN_OR_RETURN(tile, std::move(got[r++]));
      }
      const uint64_t cell_num = frag.TileCellNum(t);
      if (tile.cell_num != cell_num || !tile.offsets.empty() || tile.cell_size != size ||
          tile.fixed.size() != cell_num * size) {
        return Error::Corrupt(
            fmt::format("{}: tile {} of dimension '{}' has {} coordinates of {} "
                        "bytes, expected {} of {}",
                        frag.dir(), t, dim.name, tile.cell_num, tile.cell_size, cell_num, size));
      }
      for (uint64_t p = 0; p < cell_num; ++p)
        ++counts[interval(load(tile.fixed.data() + p * size))];
    }
  }
  return std::optional<std::vector<uint64_t>>(std::move(counts));
}
}  // namespace tiledbfs::core
