#include "core/read/gather.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_set>

#include "core/util/parallel.h"

namespace tiledbfs::core {
namespace {

// The most bytes a read may take for its tiles to be decoded in part
// (ReadState::parts): FUSE's largest read.
constexpr uint64_t kPartReadBytes = uint64_t{1} << 20;

// The most tiles one read decodes together before its gather: a piece of a
// view over 10,000 small fragments crosses thousands (each its own files).
constexpr size_t kMaxMissingTiles = 4096;

// The tile of `key` in `tiles`, or null, looking from `*from` on and
// wrapping around, and leaving `*from` just past the tile found. A gather
// takes its tiles about in the order DecodeMissingTiles listed them: the
// next one is most often the first looked at. (A scan from the start each
// time made a read crossing the 10,000 one-tile fragments of issue 5's
// array (c) quadratic.)
std::shared_ptr<const DecodedTile> FindFrom(const HeldTiles& tiles, const TileKey& key,
                                            size_t* from) {
  const size_t n = tiles.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (*from + k) % n;
    if (tiles[i].second && tiles[i].first == key) {
      *from = i + 1;
      return tiles[i].second;
    }
  }
  return nullptr;
}

// The same from the first tile.
std::shared_ptr<const DecodedTile> Find(const HeldTiles& tiles, const TileKey& key) {
  size_t from = 0;
  return FindFrom(tiles, key, &from);
}

// About the bytes tile `tile` of attribute `f` takes decoded: its cells'
// fixed bytes (offsets, validity) plus, for var fields, the values' size as
// stored when the fragment says it (else as much again). nullopt on overflow.
std::optional<uint64_t> DecodedTileBytes(const FragmentMetadata& frag, FieldRef f, uint64_t tile) {
  const FieldShape shape = ShapeOf(frag, f);
  uint64_t bytes = 0;
  if (MulOverflow(frag.TileCellNum(tile), shape.cell_size() + (shape.nullable ? 1 : 0), &bytes)) {
    return std::nullopt;
  }
  if (shape.var()) {
    auto sizes = frag.TileVarSizes(f);
    const uint64_t values = sizes.ok() && tile < (*sizes)->size() ? (**sizes)[tile] : bytes;
    if (AddOverflow(bytes, values, &bytes)) return std::nullopt;
  }
  return bytes;
}

// A tile that a read's cells come from.
struct Crossed {
  TileKey key;
  uint32_t fragment;
};

// The distinct tiles that cells [first, end) come from, in the order the
// cells need them, up to kMaxCrossedTiles.
constexpr size_t kMaxCrossedTiles = 4 * kMaxMissingTiles;
std::vector<Crossed> CrossedTiles(const ViewInputs& in, const CellIndex& index,
                                  const std::vector<int>& field,
                                  const std::vector<int>& footer_index, uint64_t first,
                                  uint64_t end) {
  std::vector<Crossed> crossed;
  std::unordered_set<TileKey, TileKeyHash> seen;
  // The keys met last, by slot: the tiles of a row, crossed again and
  // again, are found here without hashing.
  std::array<TileKey, 64> recent{};
  for (uint64_t i = first; i < end && crossed.size() < kMaxCrossedTiles;) {
    CellRun run = index.RunAt(i, end - i);
    i += run.count;
    const CellRef& r = run.ref;
    if (r.fragment == CellRef::kFill || field[r.fragment] < 0) continue;
    TileKey key{in.fragments[r.fragment].get(), footer_index[r.fragment], r.tile};
    TileKey& last = recent[(r.tile * 7 + r.fragment) % recent.size()];
    if (key == last) continue;
    last = key;
    if (seen.insert(key).second) crossed.push_back({key, r.fragment});
  }
  return crossed;
}

// The bytes the tiles `crossed` take decoded, as far as `limit` (past it,
// limit + 1): what a read takes in whole tiles.
uint64_t CrossedTileBytes(const ViewInputs& in, FieldRef::Kind kind, const std::vector<int>& field,
                          const std::vector<Crossed>& crossed, uint64_t limit) {
  uint64_t bytes = 0;
  for (const Crossed& c : crossed) {
    if (bytes > limit) break;
    const FieldRef f{kind, static_cast<uint32_t>(field[c.fragment])};
    bytes += DecodedTileBytes(*in.fragments[c.fragment], f, c.key.tile).value_or(limit + 1);
  }
  return std::min(bytes, limit + 1);
}

// Decodes, several at once, the tiles `crossed` (of a read's cells) that
// neither the cache nor the reader's `held` tiles have (up to a quarter of
// the cache's budget), so that a read needing a new row of tiles uses every
// core. Returns them by key: the gather takes them from there, so a cache
// too small to keep them does not make it decode them again. Errors are
// left for the gather, which decodes the tile again and reports them.
HeldTiles DecodeMissingTiles(const ViewInputs& in, FieldRef::Kind kind,
                             const std::vector<int>& field, const std::vector<Crossed>& crossed,
                             TileCache& cache, const HeldTiles* held) {
  std::vector<Crossed> missing;
  for (const Crossed& c : crossed) {
    if (cache.Contains(c.key) || (held != nullptr && Find(*held, c.key))) continue;
    missing.push_back(c);
    if (missing.size() >= kMaxMissingTiles) break;
  }
  if (missing.size() < 2) return {};
  // Tiles of a field have about the same size: stop at the limit (the
  // gather holds them until it ends; the rest it decodes one at a time).
  // A quarter of the budget covers a row of tiles that a piece of a
  // row-major file crosses (32 tiles of 1 MiB in the benchmark's dense1,
  // with the default 128 MiB of tiles).
  const uint64_t limit = cache.budget_bytes() / 4;
  uint64_t bytes = 0;
  std::vector<TileKey> keys;
  std::vector<std::shared_ptr<FragmentMetadata>> frags;
  std::vector<TileRequest> requests;
  for (const Crossed& m : missing) {
    if (bytes >= limit) break;
    // Being decoded ahead (or by another reader): the gather waits for it.
    if (!cache.BeginDecode(m.key)) continue;
    const FragmentMetadata& frag = *in.fragments[m.fragment];
    const FieldRef f{kind, static_cast<uint32_t>(field[m.fragment])};
    bytes += DecodedTileBytes(frag, f, m.key.tile).value_or(limit);
    keys.push_back(m.key);
    frags.push_back(in.fragments[m.fragment]);
    requests.push_back({&frag, f, m.key.tile});
  }
  // The small tile files of a group of them read together, then decoded on
  // every core (ReadTiles); groups of kTilesPerGroup bound the stored bytes
  // held at once. Errors are left for the gather.
  constexpr size_t kTilesPerGroup = 256;
  HeldTiles ahead(keys.size());
  for (size_t g = 0; g < keys.size(); g += kTilesPerGroup) {
    const size_t n = std::min(kTilesPerGroup, keys.size() - g);
    std::vector<Result<DecodedTile>> got;
    try {
      got = ReadTiles(std::span(requests).subspan(g, n), in.encrypted);
    } catch (...) {
      // Out of memory: left for the gather, which reports it.
    }
    for (size_t k = 0; k < n; ++k) {
      std::shared_ptr<const DecodedTile> tile;
      if (k < got.size() && got[k].ok()) {
        try {
          tile = std::make_shared<const DecodedTile>(std::move(got[k]).value());
        } catch (...) {
        }
      }
      tile = cache.EndDecode(keys[g + k], std::move(tile), frags[g + k]);
      if (tile) ahead[g + k] = {keys[g + k], std::move(tile)};
    }
  }
  return ahead;
}

// A sequential reader's next cells [end, ...): sends the tiles they need to
// be decoded in the background (TileCache::DecodeAhead), as far as a
// quarter of the cache's budget of cell values from `end` or until the
// cache takes no more. Each reader walks each cell once (`ahead.to`).
// `cell_bytes`: a cell's fixed bytes (offset, validity), for the window.
void DecodeAhead(const ViewInputs& in, const CellIndex& index, FieldRef::Kind kind,
                 const std::vector<int>& field, const std::vector<int>& footer_index, uint64_t end,
                 uint64_t cell_bytes, TileCache& cache, ReadState::Ahead& ahead) {
  const uint64_t window = cache.ahead_budget() / std::max<uint64_t>(cell_bytes, 1);
  const uint64_t to = end + std::min(window, index.cell_count - end);
  uint64_t i = std::max(ahead.to, end);
  // Tiles of a remote storage are sent once a quarter of the room ahead is
  // free, not one by one as the reader frees it: the decode-ahead workers
  // then take them many at once, in few large GETs (ReadTilesEach).
  if (i < to && !in.fragments.empty() &&
      in.fragments.front()->storage().PreferredParallelism() > 1 &&
      cache.ahead_room() < cache.ahead_budget() / 4) {
    return;
  }
  if (ahead.sent.size() > 4096) {
    ahead.sent.clear();
    ahead.recent.fill(TileKey{});
  }
  while (i < to) {
    CellRun run = index.RunAt(i, to - i);
    const CellRef& r = run.ref;
    if (r.fragment != CellRef::kFill && field[r.fragment] >= 0) {
      TileKey key{in.fragments[r.fragment].get(), footer_index[r.fragment], r.tile};
      TileKey& recent = ahead.recent[(r.tile * 7 + r.fragment) % ahead.recent.size()];
      if (!(recent == key)) {  // else sent already
        if (!ahead.sent.count(key) && !cache.Contains(key)) {
          const FragmentMetadata& frag = *in.fragments[r.fragment];
          const FieldRef f{kind, static_cast<uint32_t>(field[r.fragment])};
          const std::optional<uint64_t> bytes = DecodedTileBytes(frag, f, r.tile);
          if (!bytes) break;
          AheadTile t{key, in.fragments[r.fragment], f, in.encrypted, *bytes};
          if (!cache.DecodeAhead(std::move(t))) break;  // the cache is full ahead: later
        }
        ahead.sent.insert(key);
        recent = key;
      }
    }
    i += run.count;
  }
  ahead.to = i;
}

// The part in `parts` of tile `key` that holds cells [from, to], or null.
const HeldPart* FindPart(const std::vector<HeldPart>& parts, const TileKey& key, uint64_t from,
                         uint64_t to) {
  for (const HeldPart& p : parts) {
    if (p.key == key && p.first <= from && to - p.first < p.tile->cell_num) return &p;
  }
  return nullptr;
}

// The key of the one chunk of tile `key` (its chunks' places: `map`) that
// holds bytes [lo, hi) in whole cells of `cs` bytes; chunk 0 (none) when
// the bytes span several chunks.
TileKey ChunkKey(TileKey key, const ChunkMap& map, uint64_t lo, uint64_t hi, uint64_t cs) {
  const auto [a, b] = ChunksHolding(map, lo, hi);
  key.chunk = 0;
  if (b == a + 1 && map[a].unfiltered_offset % cs == 0 && map[a].unfiltered_size % cs == 0) {
    key.chunk = static_cast<uint32_t>(a) + 1;
  }
  return key;
}

// The most bytes of parts a reader keeps per field (ReadState::held_parts).
constexpr uint64_t kHeldPartBytes = uint64_t{8} << 20;

}  // namespace

int FragmentAttribute(const FragmentMetadata& frag, const Attribute& attr) {
  const ArraySchema& own = frag.schema();
  const int a = own.AttributeIndex(attr.name);
  if (a < 0 || own.attributes[a].var() != attr.var()) return -1;
  return a;
}

Result<AttributeGather> AttributeGather::Make(const GatherContext& ctx, const std::string& name) {
  const ArraySchema& schema = *ctx.in.schema;
  const int ai = schema.AttributeIndex(name);
  if (ai >= 0) {
    // Not owned: the schema outlives the gather.
    return AttributeGather(
        ctx,
        std::shared_ptr<const Attribute>(std::shared_ptr<const void>(), &schema.attributes[ai]),
        FieldRef::Kind::kAttribute);
  }
  const int di = schema.DimensionIndex(name);
  if (di < 0 || schema.dense()) return Error::NotFound(fmt::format("no attribute '{}'", name));
  // A sparse dimension read like an attribute that every cell has, from
  // fragments that keep it in tiles of its own (not zipped: ZippedCoords).
  for (const auto& frag : ctx.in.fragments) {
    if (frag->tile_num() > 0 && frag->FieldIndex(FieldRef::Dimension(di)) < 0) {
      return Error::Unsupported(
          fmt::format("{}: no tiles of dimension '{}' alone to gather", frag->dir(), name));
    }
  }
  const Dimension& dim = schema.dimensions[di];
  auto as_attr = std::make_shared<Attribute>();
  as_attr->name = dim.name;
  as_attr->type = dim.type;
  as_attr->cell_val_num = dim.cell_val_num;
  return AttributeGather(ctx, std::move(as_attr), FieldRef::Kind::kDimension);
}

AttributeGather::AttributeGather(const GatherContext& ctx, std::shared_ptr<const Attribute> field,
                                 FieldRef::Kind kind)
    : ctx_(ctx), attr_(std::move(field)), kind_(kind), var_(attr_->var()), cs_(attr_->cell_size()) {
  const Attribute& attr = *attr_;
  // The fill cell: the schema's fill value, repeated or cut to a whole cell.
  fill_ = attr.fill_value;
  if (!var_) {
    ByteVec cell(cs_, 0);
    if (!fill_.empty()) {
      for (uint64_t i = 0; i < cs_; ++i) cell[i] = fill_[i % fill_.size()];
    }
    fill_ = std::move(cell);
  }
  const size_t nf = ctx.in.fragments.size();
  field_.assign(nf, -1);
  footer_index_.assign(nf, -1);
  for (size_t f = 0; f < nf; ++f) {
    field_[f] = kind == FieldRef::Kind::kDimension ? ctx.in.schema->DimensionIndex(attr.name)
                                                   : FragmentAttribute(*ctx.in.fragments[f], attr);
    if (field_[f] >= 0) footer_index_[f] = ctx.in.fragments[f]->FieldIndex(Field(f));
  }
}

Result<Column> AttributeGather::Read(uint64_t first, uint64_t count, GatherOutput out) {
  const CellIndex& index = ctx_.index;
  if (first > index.cell_count || count > index.cell_count - first) {
    return Error::InvalidArgument(
        fmt::format("cells [{}, +{}) of {}", first, count, index.cell_count));
  }
  const Attribute& attr = *attr_;
  ReadState* state = ctx_.state;
  r_ = PerRead{};
  r_.out = out;
  r_.held = state != nullptr ? &state->held[attr.name] : nullptr;
  Column& c = r_.column;
  c.name = attr.name;
  c.type = attr.type;
  c.cell_val_num = attr.cell_val_num;
  c.nullable = attr.nullable;
  c.cell_count = count;
  r_.fixed_out = out.into;
  if (var_) {
    c.offsets.resize(count + 1);
  } else if (out.pieces != nullptr) {
    r_.fixed_out = nullptr;  // each run's values go to `pieces`
  } else if (out.into == nullptr) {
    c.data.resize(count * cs_);
    r_.fixed_out = c.data.data();
  }
  if (attr.nullable) c.validity.resize(count);

  const uint64_t end = first + count;
  Plan(first, end);
  for (uint64_t i = first; i < end;) {
    CellRun run = index.RunAt(i, end - i);
    i += run.count;
    const CellRef& r = run.ref;
    if (r.fragment == CellRef::kFill || field_[r.fragment] < 0) {
      AppendFill(run.count);
      continue;
    }
    const FragmentMetadata& frag = *ctx_.in.fragments[r.fragment];
    // The run's last position, overflow-checked, must lie in the tile.
    uint64_t last_pos;
    if (MulOverflow(run.count - 1, run.step, &last_pos) ||
        AddOverflow(last_pos, uint64_t{r.pos}, &last_pos) || last_pos >= frag.TileCellNum(r.tile)) {
      return Error::Corrupt(fmt::format("{}: cells from {} of tile {} beyond its {} cells",
                                        frag.dir(), r.pos, r.tile, frag.TileCellNum(r.tile)));
    }
    Slot& slot = r_.slots[(r.tile * 7 + r.fragment) % r_.slots.size()];
    if (!slot.t || slot.fragment != r.fragment || slot.tile != r.tile || r.pos < slot.first ||
        last_pos - slot.first >= slot.t->cell_num) {
      TRY(Take(r, last_pos, slot));
    }
    if (r.pos < slot.first || last_pos - slot.first >= slot.t->cell_num) {
      return Error::Corrupt(fmt::format("{}: cells from {} of tile {} beyond its {} cells",
                                        frag.dir(), r.pos, r.tile, slot.t->cell_num));
    }
    Copy(slot, run);
  }
  if (var_) c.offsets[count] = c.data.size();
  KeepForNextRead(end);
  return std::move(r_.column);
}

void AttributeGather::Plan(uint64_t first, uint64_t end) {
  const std::string& name = attr_->name;
  ReadState* state = ctx_.state;
  // Sequential: going on from within the last read or its end, or from
  // the first cell.
  if (state != nullptr) {
    auto it = state->last.find(name);
    r_.sequential = first == 0 || (it != state->last.end() && it->second.first <= first &&
                                   first <= it->second.second);
    state->last[name] = {first, end};
  }
  // A seek (ReadState::parts) decodes only the chunks it needs of the tiles
  // not at hand; a read going on from the last one decodes whole tiles, as
  // long as the cache's StreamBudget takes the tiles it crosses.
  const bool part_field = state != nullptr && state->parts && !var_ && !attr_->nullable &&
                          end - first <= kPartReadBytes / std::max<uint64_t>(cs_, 1);
  r_.parts = part_field && !r_.sequential;
  std::vector<Crossed> crossed;  // the tiles of the read, when it takes whole ones
  if (!r_.parts) crossed = CrossedTiles(ctx_.in, ctx_.index, field_, footer_index_, first, end);
  r_.share = part_field ? &state->streams[name] : nullptr;
  if (r_.share != nullptr) {
    if (r_.sequential) {
      const uint64_t limit = ctx_.cache.budget_bytes() / 2;
      r_.parts = !r_.share->Ask(ctx_.cache.stream_budget(),
                                CrossedTileBytes(ctx_.in, kind_, field_, crossed, limit));
    } else {
      r_.share->Drop();
    }
  }
  r_.held_parts = part_field ? &state->held_parts[name] : nullptr;
  if (!r_.parts)
    r_.ahead = DecodeMissingTiles(ctx_.in, kind_, field_, crossed, ctx_.cache, r_.held);
}

uint8_t* AttributeGather::FixedDestination(uint64_t n) {
  return r_.out.pieces != nullptr ? r_.out.pieces->AddOwned(n * cs_) : r_.fixed_out + r_.done * cs_;
}

void AttributeGather::AppendFill(uint64_t n) {
  Column& c = r_.column;
  if (var_) {
    for (uint64_t k = 0; k < n; ++k) {
      c.offsets[r_.done + k] = c.data.size();
      AppendBytes(c.data, fill_.data(), fill_.size());
    }
  } else if (cs_ > 0) {
    uint8_t* dst = FixedDestination(n);
    for (uint64_t k = 0; k < n; ++k) std::memcpy(dst + k * cs_, fill_.data(), cs_);
  }
  if (attr_->nullable) {
    std::memset(c.validity.data() + r_.done, static_cast<uint8_t>(attr_->fill_value_validity), n);
  }
  r_.done += n;
}

Status AttributeGather::Take(const CellRef& r, uint64_t last_pos, Slot& slot) {
  const FragmentMetadata& frag = *ctx_.in.fragments[r.fragment];
  slot.kept = false;
  slot.fragment = r.fragment;
  slot.tile = r.tile;
  slot.first = 0;
  TileKey key{&frag, footer_index_[r.fragment], r.tile};
  std::shared_ptr<const DecodedTile> tile = r_.held != nullptr ? Find(*r_.held, key) : nullptr;
  if (!tile) tile = FindFrom(r_.ahead, key, &r_.ahead_from);
  if (!tile) tile = ctx_.cache.Get(key);
  const HeldPart* kept = nullptr;
  if (!tile && r_.held_parts != nullptr) {
    kept = FindPart(r_.used_parts, key, r.pos, last_pos);
    if (kept == nullptr) {
      kept = FindPart(*r_.held_parts, key, r.pos, last_pos);
      if (kept != nullptr) r_.used_parts.push_back(*kept);
    }
  }
  if (kept != nullptr) {
    slot.first = kept->first;
    slot.t = kept->tile;
    return Ok();
  }
  if (!tile && r_.parts) return TakePart(key, r, last_pos, slot);
  if (!tile) {
    // Claimed: a decode-ahead worker that has the tile queued skips it. The
    // reader waits for this tile alone: its chunks go on every core.
    ASSIGN_OR_RETURN(tile, ctx_.cache.GetOrDecode(
                               key,
                               [&] {
                                 return ReadTile(frag, Field(r.fragment), r.tile, ctx_.in.encrypted,
                                                 UsableCores());
                               },
                               ctx_.in.fragments[r.fragment]));
  }
  if (!var_ && tile->cell_size != cs_) {
    return Error::Corrupt(fmt::format("{}: attribute '{}' cell of {} bytes, expected {}",
                                      frag.dir(), attr_->name, tile->cell_size, cs_));
  }
  if (r_.held != nullptr) r_.used.emplace_back(key, tile);
  slot.t = std::move(tile);
  return Ok();
}

Status AttributeGather::TakePart(const TileKey& key, const CellRef& r, uint64_t last_pos,
                                 Slot& slot) {
  // Only the chunks of the run's cells; the tile's chunk map (cached) lets
  // the next parts of the tile read only their own chunks. A run within one
  // chunk takes that chunk alone, shared with other readers through the
  // cache.
  const FragmentMetadata& frag = *ctx_.in.fragments[r.fragment];
  TileCache& cache = ctx_.cache;
  std::shared_ptr<const ChunkMap> map = cache.GetChunkMap(key);
  const bool mapped = map != nullptr;
  const uint64_t lo = uint64_t{r.pos} * cs_, hi = (last_pos + 1) * cs_;
  TileKey chunk_key = map ? ChunkKey(key, *map, lo, hi, cs_) : key;
  std::shared_ptr<const DecodedTile> shared = chunk_key.chunk != 0 ? cache.Get(chunk_key) : nullptr;
  if (shared) {
    slot.first = (*map)[chunk_key.chunk - 1].unfiltered_offset / cs_;
    slot.t = std::move(shared);
  } else {
    ASSIGN_OR_RETURN(TilePart part, ReadTilePart(frag, Field(r.fragment), r.tile, ctx_.in.encrypted,
                                                 r.pos, last_pos + 1, &map));
    if (part.tile.cell_size != cs_) {
      return Error::Corrupt(fmt::format("{}: attribute '{}' cell of {} bytes, expected {}",
                                        frag.dir(), attr_->name, part.tile.cell_size, cs_));
    }
    if (!mapped && map) {  // made by this read
      cache.PutChunkMap(key, map, ctx_.in.fragments[r.fragment]);
      chunk_key = ChunkKey(key, *map, lo, hi, cs_);
    }
    slot.first = part.first;
    slot.t = std::make_shared<const DecodedTile>(std::move(part.tile));
    if (chunk_key.chunk != 0) {
      const ChunkSpan& c = (*map)[chunk_key.chunk - 1];
      if (c.unfiltered_offset == slot.first * cs_ && c.unfiltered_size == slot.t->cell_num * cs_) {
        slot.t = cache.Put(chunk_key, slot.t, ctx_.in.fragments[r.fragment]);
      }
    }
  }
  if (r_.held_parts != nullptr) r_.used_parts.push_back({key, slot.first, slot.t});
  return Ok();
}

void AttributeGather::Copy(Slot& slot, const CellRun& run) {
  const CellRef& r = run.ref;
  const DecodedTile& tile = *slot.t;
  Column& c = r_.column;
  Pieces* pieces = r_.out.pieces;
  const uint64_t at = r.pos - slot.first;  // the run's first cell in slot.t
  if (!var_ && run.step == 1 && pieces != nullptr) {
    if (!slot.kept) {
      pieces->keep.push_back(slot.t);
      slot.kept = true;
    }
    pieces->Add(tile.fixed.data() + at * cs_, run.count * cs_);
  } else if (!var_) {
    uint8_t* dst = FixedDestination(run.count);
    const uint8_t* src = tile.fixed.data() + at * cs_;
    if (run.step == 1) {
      std::memcpy(dst, src, run.count * cs_);
    } else {
      for (uint64_t k = 0; k < run.count; ++k)
        std::memcpy(dst + k * cs_, src + k * run.step * cs_, cs_);
    }
  } else if (run.step == 1 && !tile.offsets.empty()) {
    // One block of values; offsets shifted to this column's.
    const uint64_t from = tile.offsets[r.pos], to = tile.offsets[r.pos + run.count];
    const uint64_t shift = c.data.size() - from;
    for (uint64_t k = 0; k < run.count; ++k)
      c.offsets[r_.done + k] = tile.offsets[r.pos + k] + shift;
    AppendBytes(c.data, tile.var.data() + from, to - from);
  } else {
    for (uint64_t k = 0, pos = r.pos; k < run.count; ++k, pos += run.step) {
      Bytes value = tile.cell(pos);
      c.offsets[r_.done + k] = c.data.size();
      AppendBytes(c.data, value);
    }
  }
  if (attr_->nullable) {
    for (uint64_t k = 0, pos = r.pos; k < run.count; ++k, pos += run.step) {
      c.validity[r_.done + k] = tile.valid(pos) ? 1 : 0;
    }
  }
  r_.done += run.count;
}

void AttributeGather::KeepForNextRead(uint64_t end) {
  const CellIndex& index = ctx_.index;
  TileCache& cache = ctx_.cache;
  if (r_.held_parts != nullptr) {
    // The parts used last first, each once, up to kHeldPartBytes.
    uint64_t bytes = 0;
    std::vector<HeldPart>& held_parts = *r_.held_parts;
    held_parts.clear();
    for (auto it = r_.used_parts.rbegin(); it != r_.used_parts.rend() && bytes < kHeldPartBytes;
         ++it) {
      if (FindPart(held_parts, it->key, it->first, it->first + it->tile->cell_num - 1)) continue;
      bytes += TileCache::SizeOf(*it->tile);
      held_parts.push_back(std::move(*it));
    }
  }
  if (r_.share != nullptr && end == index.cell_count) r_.share->Drop();  // the field is read
  if (r_.sequential && !r_.parts && end < index.cell_count) {
    DecodeAhead(ctx_.in, index, kind_, field_, footer_index_, end, cs_ + (attr_->nullable ? 1 : 0),
                cache, ctx_.state->ahead[attr_->name]);
  }
  if (r_.held != nullptr) {
    // The tiles used last first (the next read starts where this one ended),
    // each once, up to a sixteenth of the budget or 16 MiB (enough for one
    // piece of a sparse view over a few overlapping fragments).
    const uint64_t cap = std::max(cache.budget_bytes() / 16, uint64_t{16} << 20);
    std::unordered_set<TileKey, TileKeyHash> taken;
    uint64_t bytes = 0;
    HeldTiles& held = *r_.held;
    held.clear();
    for (auto it = r_.used.rbegin(); it != r_.used.rend() && bytes < cap; ++it) {
      if (!taken.insert(it->first).second) continue;
      bytes += TileCache::SizeOf(*it->second);
      held.push_back(std::move(*it));
    }
  }
}

Result<Column> GatherAttribute(const GatherContext& ctx, const std::string& name, uint64_t first,
                               uint64_t count, GatherOutput out) {
  ASSIGN_OR_RETURN(AttributeGather gather, AttributeGather::Make(ctx, name));
  return gather.Read(first, count, out);
}

uint64_t AttributeTileBytes(const ViewInputs& in, const CellIndex& index, const std::string& name) {
  const int va = in.schema->AttributeIndex(name);
  if (va < 0) return 0;
  uint64_t bytes = 0;
  for (const CellIndex::SparseTile& t : index.sparse_tiles) {
    if (t.fragment >= in.fragments.size()) continue;
    const FragmentMetadata& frag = *in.fragments[t.fragment];
    const int a = FragmentAttribute(frag, in.schema->attributes[va]);
    if (a < 0) continue;
    const uint64_t b = DecodedTileBytes(frag, FieldRef::Attribute(a), t.tile).value_or(UINT64_MAX);
    if (AddOverflow(bytes, b, &bytes)) return UINT64_MAX;
  }
  return bytes;
}
}  // namespace tiledbfs::core
