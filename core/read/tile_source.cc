#include "core/read/tile_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "core/util/parallel.h"
#include "core/util/stop.h"

namespace tiledbfs::core {
namespace {

// Shape of the internal uint64 fields (t.tdb, dt.tdb, dci.tdb).
FieldShape Uint64Shape(const ArraySchema& schema) {
  FieldShape s;
  s.type = Datatype::kUInt64;
  s.filters = &schema.coords_filters;
  return s;
}

// A tile file the fragment's metadata lists but that is gone (a vacuum
// under an open view) is an I/O error, not a name that does not exist.
Result<ByteVec> MissingIsIo(Result<ByteVec> r) {
  if (!r.ok() && r.error().code() == ErrorCode::kNotFound) return Error::Io(r.error().message());
  return r;
}

Result<ByteVec> ReadRange(const FragmentMetadata& fragment, const std::string& file,
                          FragmentMetadata::TileLocation loc) {
  return MissingIsIo(fragment.storage().Read(file, loc.offset, loc.size));
}

TileContext MakeContext(const FragmentMetadata& fragment, const std::string& file, uint64_t offset,
                        Datatype type, uint64_t cell_size, bool encrypted) {
  // The array's limits, given when its fragments' metadata was loaded.
  TileContext ctx(fragment.limits());
  ctx.type = type;
  ctx.cell_size = cell_size;
  ctx.format_version = fragment.version();
  ctx.key = fragment.key();
  ctx.encrypted = encrypted;
  ctx.file = file;
  ctx.file_offset = offset;
  return ctx;
}

}  // namespace

FieldShape ShapeOf(const FragmentMetadata& fragment, FieldRef field) {
  const ArraySchema& schema = fragment.schema();
  FieldShape s;
  switch (field.kind) {
    case FieldRef::Kind::kAttribute: {
      const Attribute& a = schema.attributes[field.index];
      s.type = a.type;
      s.cell_val_num = a.cell_val_num;
      s.nullable = a.nullable;
      s.filters = &a.filters;
      return s;
    }
    case FieldRef::Kind::kDimension: {
      const Dimension& d = schema.dimensions[field.index];
      s.type = d.type;
      s.cell_val_num = d.cell_val_num;
      s.filters = d.filters.empty() ? &schema.coords_filters : &d.filters;
      return s;
    }
    case FieldRef::Kind::kCoords: {
      s.type = schema.dimensions.empty() ? Datatype::kUInt8 : schema.dimensions[0].type;
      s.cell_val_num = static_cast<uint32_t>(schema.dimensions.size());
      s.filters = &schema.coords_filters;
      return s;
    }
    case FieldRef::Kind::kTimestamps:
    case FieldRef::Kind::kDeleteTimestamps:
    case FieldRef::Kind::kDeleteConditionIndex:
      return Uint64Shape(schema);
  }
  return s;
}

namespace {

// Where the bytes of a tile of a field are: its fixed part (the offsets of a
// var field), its values (var fields) and its validity (nullable fields).
struct TileRange {
  std::string file;
  FragmentMetadata::TileLocation loc;
};
struct TileFiles {
  FieldRef field;
  FieldShape shape;
  TileRange fixed;
  std::optional<TileRange> var;
  uint64_t var_size = 0;  // the values' size unfiltered, where the fragment says it
  std::optional<TileRange> validity;
};

Result<TileFiles> LocateTile(const FragmentMetadata& fragment, FieldRef field, uint64_t tile) {
  if (tile >= fragment.tile_num()) {
    return Error::InvalidArgument(
        fmt::format("{}: tile {} of {}", fragment.dir(), tile, fragment.tile_num()));
  }
  TileFiles f;
  f.field = field;
  f.shape = ShapeOf(fragment, field);
  f.fixed.file = fragment.DataFile(field);
  ASSIGN_OR_RETURN(f.fixed.loc, fragment.FixedTile(field, tile));
  if (f.shape.var()) {
    f.var.emplace();
    f.var->file = fragment.VarFile(field);
    ASSIGN_OR_RETURN(f.var->loc, fragment.VarTile(field, tile));
    auto sizes = fragment.TileVarSizes(field);
    if (sizes.ok() && tile < (*sizes)->size()) f.var_size = (**sizes)[tile];
  }
  if (f.shape.nullable) {
    f.validity.emplace();
    f.validity->file = fragment.ValidityFile(field);
    ASSIGN_OR_RETURN(f.validity->loc, fragment.ValidityTile(field, tile));
  }
  return f;
}

// A tile's ranges in the order it reads them: fixed, var, validity (null
// where the field has none).
std::array<const TileRange*, 3> Parts(const TileFiles& f) {
  return {&f.fixed, f.var ? &*f.var : nullptr, f.validity ? &*f.validity : nullptr};
}

// The stored bytes of a tile's ranges, in the order of Parts.
struct TileBytes {
  ByteVec fixed, var, validity;
};

// Per part: bytes already read (ReadTiles), or nothing (then read here).
using ReadParts = std::array<std::optional<Result<ByteVec>>, 3>;

// Reads the parts in order and stops at the first failure, so that a tile
// read alone or in a batch reports the same error. Every tile read, alone,
// in a batch, ahead or in parts, starts here or in ReadTilePart: there a
// stop of the process (core/util/stop.h) ends whatever reads many tiles,
// each tile it has not started failing with kCancelled.
Result<TileBytes> ReadTileBytes(const FragmentMetadata& fragment, const TileFiles& f,
                                ReadParts* already = nullptr) {
  TRY(CheckStop(f.fixed.file));
  TileBytes b;
  ByteVec* into[3] = {&b.fixed, &b.var, &b.validity};
  const auto parts = Parts(f);
  for (size_t p = 0; p < 3; ++p) {
    if (parts[p] == nullptr) continue;
    Result<ByteVec> r = already != nullptr && (*already)[p]
                            ? std::move(*(*already)[p])
                            : ReadRange(fragment, parts[p]->file, parts[p]->loc);
    if (!r.ok()) return r.error();
    *into[p] = std::move(r).value();
  }
  return b;
}

std::atomic<uint64_t> g_tiles{0}, g_parts{0}, g_stored_bytes{0};
std::mutex g_by_field_mu;
// Never freed: decodes on other threads may count until the process ends.
std::map<std::string, uint64_t>& ByField() {
  static auto* by_field = new std::map<std::string, uint64_t>;
  return *by_field;
}

// A decode of `field` (a whole tile or a part), by its name.
void CountField(const FragmentMetadata& fragment, FieldRef field) {
  const ArraySchema& schema = fragment.schema();
  std::string_view name = "__coords";
  if (field.kind == FieldRef::Kind::kAttribute && field.index < schema.attributes.size()) {
    name = schema.attributes[field.index].name;
  } else if (field.kind == FieldRef::Kind::kDimension && field.index < schema.dimensions.size()) {
    name = schema.dimensions[field.index].name;
  } else if (field.kind == FieldRef::Kind::kTimestamps) {
    name = "__timestamps";
  } else if (field.kind == FieldRef::Kind::kDeleteTimestamps) {
    name = "__delete_timestamps";
  } else if (field.kind == FieldRef::Kind::kDeleteConditionIndex) {
    name = "__delete_condition_index";
  }
  std::lock_guard<std::mutex> lock(g_by_field_mu);
  ++ByField()[std::string(name)];
}

// Unfilters the stored bytes of tile `tile`.
Result<DecodedTile> DecodeTile(const FragmentMetadata& fragment, uint64_t tile, bool encrypted,
                               const TileFiles& f, TileBytes raw, unsigned threads = 1) {
  g_tiles.fetch_add(1, std::memory_order_relaxed);
  CountField(fragment, f.field);
  g_stored_bytes.fetch_add(raw.fixed.size() + raw.var.size() + raw.validity.size(),
                           std::memory_order_relaxed);
  const FieldShape& shape = f.shape;
  const ArraySchema& schema = fragment.schema();
  const std::string& file = f.fixed.file;
  const FragmentMetadata::TileLocation& loc = f.fixed.loc;
  DecodedTile out;
  out.cell_num = fragment.TileCellNum(tile);
  if (!shape.var()) {
    TileContext ctx =
        MakeContext(fragment, file, loc.offset, shape.type, shape.cell_size(), encrypted);
    ctx.threads = threads;
    ASSIGN_OR_RETURN(out.fixed, UnfilterTile(*shape.filters, raw.fixed, ctx));
    out.cell_size = shape.cell_size();
    uint64_t want = 0;
    if (MulOverflow(out.cell_num, out.cell_size, &want) || out.fixed.size() != want) {
      return Error::Corrupt(
          fmt::format("{}: tile {} at offset {}: {} bytes, expected {} ({} cells)", file, tile,
                      loc.offset, out.fixed.size(), want, out.cell_num));
    }
  } else {
    TileContext octx = MakeContext(fragment, file, loc.offset, Datatype::kUInt64, 8, encrypted);
    TileContext vctx = MakeContext(fragment, f.var->file, f.var->loc.offset, shape.type,
                                   DatatypeSize(shape.type), encrypted);
    ASSIGN_OR_RETURN(VarTile vt, UnfilterVarTile(schema.offsets_filters, raw.fixed, octx,
                                                 *shape.filters, raw.var, vctx, f.var_size));
    if (vt.offsets.size() != out.cell_num) {
      return Error::Corrupt(fmt::format("{}: tile {} at offset {}: {} offsets for {} cells", file,
                                        tile, loc.offset, vt.offsets.size(), out.cell_num));
    }
    out.offsets = std::move(vt.offsets);
    // The end offset, in room of its own: a tile counts its offsets'
    // capacity (TileCache::SizeOf), and a vector full up would double it.
    if (out.offsets.capacity() != out.offsets.size() + 1) {
      std::vector<uint64_t> exact;
      exact.reserve(out.offsets.size() + 1);
      exact.assign(out.offsets.begin(), out.offsets.end());
      out.offsets = std::move(exact);
    }
    out.offsets.push_back(vt.data.size());
    for (uint64_t i = 0; i + 1 < out.offsets.size(); ++i) {
      if (out.offsets[i] > out.offsets[i + 1]) {
        return Error::Corrupt(
            fmt::format("{}: tile {}: offsets decrease at cell {}", file, tile, i));
      }
    }
    out.var = std::move(vt.data);
  }
  if (f.validity) {
    const std::string& vfile = f.validity->file;
    TileContext ctx =
        MakeContext(fragment, vfile, f.validity->loc.offset, Datatype::kUInt8, 1, encrypted);
    ASSIGN_OR_RETURN(out.validity, UnfilterTile(schema.validity_filters, raw.validity, ctx));
    if (out.validity.size() != out.cell_num) {
      return Error::Corrupt(fmt::format("{}: tile {}: {} validity bytes for {} cells", vfile, tile,
                                        out.validity.size(), out.cell_num));
    }
  }
  return out;
}

}  // namespace

DecodeStats TileDecodeStats() {
  DecodeStats s{g_tiles.load(std::memory_order_relaxed),
                g_parts.load(std::memory_order_relaxed),
                g_stored_bytes.load(std::memory_order_relaxed),
                {}};
  std::lock_guard<std::mutex> lock(g_by_field_mu);
  s.by_field = ByField();
  return s;
}

std::string DescribeDecodes(const DecodeStats& stats) {
  std::string out = fmt::format("{} tiles and {} tile parts from {} stored bytes", stats.tiles,
                                stats.parts, stats.stored_bytes);
  const char* sep = " (";
  for (const auto& [name, n] : stats.by_field) {
    out += fmt::format("{}{} {}", sep, name, n);
    sep = ", ";
  }
  if (!stats.by_field.empty()) out += ")";
  return out;
}

Result<DecodedTile> ReadTile(const FragmentMetadata& fragment, FieldRef field, uint64_t tile,
                             bool encrypted, unsigned threads) {
  ASSIGN_OR_RETURN(TileFiles f, LocateTile(fragment, field, tile));
  ASSIGN_OR_RETURN(TileBytes raw, ReadTileBytes(fragment, f));
  return DecodeTile(fragment, tile, encrypted, f, std::move(raw), threads);
}

namespace {

// Ranges ReadTiles reads together: small ones (the syscalls cost more than
// the bytes), up to a total that bounds what a batch holds before decoding.
constexpr uint64_t kBatchedRangeBytes = uint64_t{64} << 10;
constexpr uint64_t kBatchedTotalBytes = uint64_t{16} << 20;
// Tiles of fewer stored bytes in all are decoded on the calling thread: a
// thread's start and join (about 50 us here) cost more than it would save.
constexpr uint64_t kParallelDecodeBytes = uint64_t{64} << 10;

}  // namespace

namespace {

// Where each read costs a round trip (S3): the tiles in order, in units of
// consecutive tiles of at least kRemoteUnitBytes stored (one tile of that
// or more alone), each unit's ranges read by one ReadMany (small tiles'
// ranges coalesced into few GETs) then decoded by the thread that read it.
// Up to parallel + 2 threads (the caller among them) take the next unit as
// soon as they are done with theirs, so that the GETs stay under way while
// tiles are decoded, as long as the stored bytes read or being read and not
// yet decoded stay within kBatchedTotalBytes (one unit beyond them alone).
constexpr uint64_t kRemoteUnitBytes = uint64_t{512} << 10;
// Units read ahead of a sequential reader (ReadTilesEach's `ahead`), and
// the stored bytes such a call holds: four units under way at once.
constexpr uint64_t kAheadUnitBytes = uint64_t{8} << 20;
constexpr uint64_t kAheadHeldBytes = 4 * kAheadUnitBytes;

// A tile's stored bytes, counted up to kBatchedTotalBytes (a tile of that
// or more is read alone).
uint64_t StoredBytes(const TileFiles& f) {
  uint64_t bytes = 0;
  for (const TileRange* part : Parts(f)) {
    if (part != nullptr) bytes += std::min(part->loc.size, kBatchedTotalBytes);
  }
  return std::min(bytes, kBatchedTotalBytes);
}

void StreamRemoteTiles(std::span<const TileRequest> tiles,
                       const std::vector<std::optional<TileFiles>>& files, bool encrypted,
                       const Storage& storage, size_t parallel, bool ahead, const TileSink& each) {
  struct Unit {
    size_t begin = 0, end = 0;  // tiles [begin, end), those with files
    uint64_t bytes = 0;
  };
  uint64_t unit_bytes = kRemoteUnitBytes;
  if (ahead) {
    // The batch in ceil(total / 8 MiB) units of about equal size.
    uint64_t total = 0;
    for (size_t i = 0; i < tiles.size(); ++i) {
      if (files[i]) total += StoredBytes(*files[i]);
    }
    const uint64_t n = std::max<uint64_t>(1, (total + kAheadUnitBytes - 1) / kAheadUnitBytes);
    unit_bytes = std::max(kRemoteUnitBytes, (total + n - 1) / n);
  }
  const uint64_t held_bytes = ahead ? kAheadHeldBytes : kBatchedTotalBytes;
  std::vector<Unit> units;
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (!files[i]) continue;
    if (units.empty() || units.back().bytes >= unit_bytes ||
        (ahead && units.back().bytes + StoredBytes(*files[i]) > kAheadUnitBytes)) {
      units.push_back({i, i, 0});
    }
    units.back().end = i + 1;
    units.back().bytes += StoredBytes(*files[i]);
  }
  std::mutex mu;
  std::condition_variable room;
  size_t next = 0;            // the next unit to take (mu)
  uint64_t held = 0;          // stored bytes of the units taken and not yet decoded (mu)
  std::exception_ptr failed;  // the first exception a thread met (mu): the others stop
  auto work = [&] {
    std::vector<ReadRequest> requests;
    std::vector<std::pair<size_t, int>> dest;  // (tile, part) of each request
    for (;;) {
      size_t u = 0;
      {
        std::unique_lock<std::mutex> lock(mu);
        room.wait(lock, [&] {
          return failed || next == units.size() || held == 0 ||
                 held + units[next].bytes <= held_bytes;
        });
        if (failed || next == units.size()) return;
        u = next++;
        held += units[u].bytes;
      }
      const Unit& unit = units[u];
      std::vector<ReadParts> read(unit.end - unit.begin);
      requests.clear();
      dest.clear();
      for (size_t i = unit.begin; i < unit.end; ++i) {
        if (!files[i]) continue;
        const auto parts = Parts(*files[i]);
        for (int p = 0; p < 3; ++p) {
          if (parts[p] == nullptr) continue;
          requests.push_back({parts[p]->file, parts[p]->loc.offset, parts[p]->loc.size});
          dest.emplace_back(i - unit.begin, p);
        }
      }
      try {
        // Stopping: no GETs; each tile's ReadTileBytes reports kCancelled.
        std::vector<Result<ByteVec>> got = StopRequested()
                                               ? std::vector<Result<ByteVec>>()
                                               : storage.ReadMany(requests, ahead ? 1 : 0);
        for (size_t r = 0; r < got.size(); ++r) {
          read[dest[r].first][dest[r].second] = MissingIsIo(std::move(got[r]));
        }
      } catch (const std::bad_alloc&) {
        // Each tile is read again alone below (and reports what it gets).
      }
      for (size_t i = unit.begin; i < unit.end; ++i) {
        if (!files[i]) continue;
        const FragmentMetadata& frag = *tiles[i].fragment;
        const TileFiles& f = *files[i];
        Result<DecodedTile> out = Error::Io("not read");
        try {
          Result<TileBytes> b = ReadTileBytes(frag, f, &read[i - unit.begin]);
          out = b.ok() ? DecodeTile(frag, tiles[i].tile, encrypted, f, std::move(b).value())
                       : Result<DecodedTile>(b.error());
        } catch (const std::bad_alloc&) {
          out = Error::OutOfMemory(fmt::format("{}: tile {}", f.fixed.file, tiles[i].tile));
        }
        read[i - unit.begin] = {};
        each(i, std::move(out));
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        held -= unit.bytes;
      }
      room.notify_all();
    }
  };
  // An exception (the sink's, or an allocation's) stops every thread and is
  // thrown here once all are joined, as a call on one thread would.
  auto guarded = [&] {
    try {
      work();
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed) failed = std::current_exception();
      }
      room.notify_all();
    }
  };
  const size_t workers = std::min(parallel + 2, units.size());
  std::vector<std::thread> threads;
  threads.reserve(workers > 0 ? workers - 1 : 0);
  try {
    for (size_t w = 1; w < workers; ++w) threads.emplace_back(guarded);
  } catch (const std::system_error&) {
    // No more threads to be had: the ones started (and this one) do it all.
  }
  guarded();
  for (std::thread& t : threads) t.join();
  if (failed) std::rethrow_exception(failed);
}

}  // namespace

void ReadTilesEach(std::span<const TileRequest> tiles, bool encrypted, unsigned threads,
                   const TileSink& each, bool ahead) {
  const size_t n = tiles.size();
  std::vector<std::optional<TileFiles>> files(n);
  const Storage* storage = nullptr;
  bool one_storage = true;
  for (size_t i = 0; i < n; ++i) {
    const FragmentMetadata& frag = *tiles[i].fragment;
    auto f = LocateTile(frag, tiles[i].field, tiles[i].tile);
    if (!f.ok()) {
      each(i, f.error());
      continue;
    }
    files[i] = std::move(f).value();
    if (storage == nullptr) storage = &frag.storage();
    one_storage = one_storage && storage == &frag.storage();
  }
  const size_t parallel = storage != nullptr ? storage->PreferredParallelism() : 1;
  if (one_storage && parallel > 1) {
    StreamRemoteTiles(tiles, files, encrypted, *storage, parallel, ahead, each);
    return;
  }
  // Per tile, per part (fixed, var, validity): the bytes read together.
  std::vector<ReadParts> read(n);
  std::vector<ReadRequest> requests;
  std::vector<std::pair<size_t, int>> dest;  // (tile, part) of each request
  for (size_t begin = 0; begin < n;) {
    size_t end = begin;
    uint64_t total = 0;
    requests.clear();
    dest.clear();
    for (; end < n; ++end) {
      if (!files[end]) continue;
      const auto parts = Parts(*files[end]);
      for (int p = 0; p < 3; ++p) {
        if (parts[p] == nullptr) continue;
        if (parts[p]->loc.size > kBatchedRangeBytes ||
            total + parts[p]->loc.size > kBatchedTotalBytes) {
          continue;
        }
        total += parts[p]->loc.size;
        requests.push_back({parts[p]->file, parts[p]->loc.offset, parts[p]->loc.size});
        dest.emplace_back(end, p);
      }
    }
    uint64_t stored = 0;
    for (size_t i = begin; i < end && stored < kParallelDecodeBytes; ++i) {
      if (files[i]) stored += StoredBytes(*files[i]);
    }
    if (one_storage && requests.size() >= 2 && !StopRequested()) {
      std::vector<Result<ByteVec>> got = storage->ReadMany(requests);
      for (size_t r = 0; r < got.size(); ++r) {
        read[dest[r].first][dest[r].second] = MissingIsIo(std::move(got[r]));
      }
    }
    ParallelFor(
        end - begin,
        [&](size_t k) {
          const size_t i = begin + k;
          if (!files[i]) return;
          const FragmentMetadata& frag = *tiles[i].fragment;
          const TileFiles& f = *files[i];
          Result<DecodedTile> out = Error::Io("not read");
          try {
            Result<TileBytes> b = ReadTileBytes(frag, f, &read[i]);
            out = b.ok() ? DecodeTile(frag, tiles[i].tile, encrypted, f, std::move(b).value())
                         : Result<DecodedTile>(b.error());
          } catch (const std::bad_alloc&) {
            out = Error::OutOfMemory(fmt::format("{}: tile {}", f.fixed.file, tiles[i].tile));
          }
          read[i] = {};
          each(i, std::move(out));
        },
        stored < kParallelDecodeBytes ? 1 : threads);
    begin = end;
  }
}

std::vector<Result<DecodedTile>> ReadTiles(std::span<const TileRequest> tiles, bool encrypted,
                                           unsigned threads) {
  std::vector<std::optional<Result<DecodedTile>>> done(tiles.size());
  // Each index is handed over once, by one thread: no lock needed.
  ReadTilesEach(tiles, encrypted, threads,
                [&](size_t i, Result<DecodedTile> tile) { done[i] = std::move(tile); });
  std::vector<Result<DecodedTile>> out;
  out.reserve(done.size());
  for (auto& d : done) out.push_back(std::move(*d));
  return out;
}

std::pair<size_t, size_t> ChunksHolding(const ChunkMap& map, uint64_t lo, uint64_t hi) {
  auto a = std::partition_point(map.begin(), map.end(), [lo](const ChunkSpan& c) {
    return c.unfiltered_offset + c.unfiltered_size <= lo;
  });
  auto b = std::partition_point(a, map.end(),
                                [hi](const ChunkSpan& c) { return c.unfiltered_offset < hi; });
  return {static_cast<size_t>(a - map.begin()), static_cast<size_t>(b - map.begin())};
}

Result<TilePart> ReadTilePart(const FragmentMetadata& fragment, FieldRef field, uint64_t tile,
                              bool encrypted, uint64_t from, uint64_t to,
                              std::shared_ptr<const ChunkMap>* map) {
  if (tile >= fragment.tile_num()) {
    return Error::InvalidArgument(
        fmt::format("{}: tile {} of {}", fragment.dir(), tile, fragment.tile_num()));
  }
  TRY(CheckStop(fragment.DataFile(field)));
  const uint64_t cell_num = fragment.TileCellNum(tile);
  if (from >= to || to > cell_num) {
    return Error::InvalidArgument(fmt::format("{}: cells [{}, {}) of tile {} of {} cells",
                                              fragment.dir(), from, to, tile, cell_num));
  }
  FieldShape shape = ShapeOf(fragment, field);
  const uint64_t cs = shape.cell_size();
  TilePart part;
  if (shape.var() || shape.nullable || cs == 0) {
    ASSIGN_OR_RETURN(part.tile, ReadTile(fragment, field, tile, encrypted));
    return part;
  }
  std::string file = fragment.DataFile(field);
  ASSIGN_OR_RETURN(FragmentMetadata::TileLocation loc, fragment.FixedTile(field, tile));
  uint64_t want = 0;
  if (MulOverflow(cell_num, cs, &want)) {
    return Error::Corrupt(
        fmt::format("{}: tile {}: {} cells of {} bytes overflow", file, tile, cell_num, cs));
  }
  TileContext ctx = MakeContext(fragment, file, loc.offset, shape.type, cs, encrypted);
  ctx.expected_size = want;  // the chunks must add up to the whole tile
  uint64_t start = 0;
  ByteVec bytes;
  if (map != nullptr && *map) {
    // Only the records of the chunks holding bytes [from * cs, to * cs).
    const ChunkMap& m = **map;
    if (m.empty() || m.back().unfiltered_offset + m.back().unfiltered_size != want) {
      return Error::Corrupt(fmt::format("{}: tile {} at offset {}: chunk map not of this tile",
                                        file, tile, loc.offset));
    }
    const auto [a, b] = ChunksHolding(m, from * cs, to * cs);
    if (a == b) {
      return Error::Corrupt(fmt::format("{}: tile {} at offset {}: no chunk holds cells [{}, {})",
                                        file, tile, loc.offset, from, to));
    }
    const uint64_t rec_from = m[a].stored_offset;
    const uint64_t rec_to = m[b - 1].stored_offset + m[b - 1].stored_size;
    if (rec_to > loc.size || rec_to <= rec_from) {
      return Error::Corrupt(fmt::format("{}: tile {} at offset {}: chunks past its {} bytes", file,
                                        tile, loc.offset, loc.size));
    }
    ASSIGN_OR_RETURN(ByteVec raw,
                     ReadRange(fragment, file, {loc.offset + rec_from, rec_to - rec_from}));
    g_parts.fetch_add(1, std::memory_order_relaxed);
    CountField(fragment, field);
    g_stored_bytes.fetch_add(raw.size(), std::memory_order_relaxed);
    ctx.file_offset = loc.offset + rec_from;
    ASSIGN_OR_RETURN(
        bytes, UnfilterChunkRecords(*shape.filters, raw, std::span(m).subspan(a, b - a), ctx));
    start = m[a].unfiltered_offset;
  } else {
    ASSIGN_OR_RETURN(ByteVec raw, ReadRange(fragment, file, loc));
    g_parts.fetch_add(1, std::memory_order_relaxed);
    CountField(fragment, field);
    g_stored_bytes.fetch_add(raw.size(), std::memory_order_relaxed);
    ASSIGN_OR_RETURN(bytes,
                     UnfilterTileRange(*shape.filters, raw, ctx, from * cs, to * cs, &start));
    if (map != nullptr) {
      // The chunks' places, for the next parts of this tile (their sizes
      // were just checked against the tile's).
      auto spans = MapChunks(raw, loc.offset);
      if (!spans.ok()) return spans.error().WithContext(file);
      *map = std::make_shared<const ChunkMap>(std::move(spans).value());
    }
  }
  if (start % cs != 0 || bytes.size() % cs != 0) {  // chunks cut cells: decode it all
    ASSIGN_OR_RETURN(part.tile, ReadTile(fragment, field, tile, encrypted));
    return part;
  }
  part.first = start / cs;
  part.tile.cell_size = cs;
  part.tile.cell_num = bytes.size() / cs;
  part.tile.fixed = std::move(bytes);
  if (part.first > from || part.first + part.tile.cell_num < to) {
    return Error::Corrupt(fmt::format("{}: tile {} at offset {}: cells [{}, {}) not in its chunks",
                                      file, tile, loc.offset, from, to));
  }
  return part;
}

Result<std::vector<DecodedTile>> ReadZippedCoordsTile(const FragmentMetadata& fragment,
                                                      uint64_t tile, bool encrypted) {
  ASSIGN_OR_RETURN(DecodedTile zipped, ReadTile(fragment, FieldRef::Coords(), tile, encrypted));
  const ArraySchema& schema = fragment.schema();
  size_t dims = schema.dimensions.size();
  std::vector<DecodedTile> out(dims);
  if (dims == 0) return out;
  uint64_t vsize = DatatypeSize(schema.dimensions[0].type);
  for (size_t d = 0; d < dims; ++d) {
    out[d].cell_num = zipped.cell_num;
    out[d].cell_size = vsize;
    out[d].fixed.resize(zipped.cell_num * vsize);
    for (uint64_t c = 0; c < zipped.cell_num; ++c) {
      std::copy_n(zipped.fixed.data() + (c * dims + d) * vsize, vsize,
                  out[d].fixed.data() + c * vsize);
    }
  }
  return out;
}

}  // namespace tiledbfs::core
