#include "core/fragment/dense_tile_grid.h"

#include <fmt/format.h>

#include <cstring>

#include "core/util/byte_reader.h"

namespace tiledbfs::core {
namespace {

template <class T>
__int128 Load(Bytes b) {
  T v;
  std::memcpy(&v, b.data(), sizeof(T));
  return static_cast<__int128>(v);
}

}  // namespace

Result<__int128> DimensionValue(Datatype type, Bytes bytes) {
  const bool fixed64 = IsDatetime(type) || IsTime(type);
  if (!IsInteger(type) && !fixed64) {
    return Error::Corrupt(
        fmt::format("a {} dimension has no integer coordinates", DatatypeName(type)));
  }
  if (bytes.size() != DatatypeSize(type)) {
    return Error::Corrupt(
        fmt::format("{} coordinate of {} bytes", DatatypeName(type), bytes.size()));
  }
  if (fixed64) return Load<int64_t>(bytes);
  switch (type) {
    case Datatype::kInt8:
      return Load<int8_t>(bytes);
    case Datatype::kUInt8:
      return Load<uint8_t>(bytes);
    case Datatype::kInt16:
      return Load<int16_t>(bytes);
    case Datatype::kUInt16:
      return Load<uint16_t>(bytes);
    case Datatype::kInt32:
      return Load<int32_t>(bytes);
    case Datatype::kUInt32:
      return Load<uint32_t>(bytes);
    case Datatype::kInt64:
      return Load<int64_t>(bytes);
    case Datatype::kUInt64:
      return Load<uint64_t>(bytes);
    default:
      break;
  }
  return Error::Corrupt(fmt::format("unexpected dimension type {}", DatatypeName(type)));
}

Result<DenseTileGrid> ComputeDenseTileGrid(const ArraySchema& schema,
                                           const std::vector<Range>& ned) {
  if (ned.size() != schema.dimensions.size() || ned.empty()) {
    return Error::Corrupt(
        fmt::format("dense grid: non-empty domain has {} ranges for {} dimensions", ned.size(),
                    schema.dimensions.size()));
  }
  DenseTileGrid g;
  g.tile_num = 1;
  g.cells_per_tile = 1;
  for (size_t i = 0; i < ned.size(); ++i) {
    const Dimension& d = schema.dimensions[i];
    auto ctx = [&](const Error& e) {
      return Error(e.code(), fmt::format("dense grid: dimension {}: {}", d.name, e.message()));
    };
    if (d.var()) return ctx(Error::Corrupt("var-sized dimension in a dense fragment"));
    auto lo = DimensionValue(d.type, d.domain.lo);
    if (!lo.ok()) return ctx(lo.error());
    auto hi = DimensionValue(d.type, d.domain.hi);
    if (!hi.ok()) return ctx(hi.error());
    auto nlo = DimensionValue(d.type, ned[i].lo);
    if (!nlo.ok()) return ctx(nlo.error());
    auto nhi = DimensionValue(d.type, ned[i].hi);
    if (!nhi.ok()) return ctx(nhi.error());
    __int128 extent = 0;
    if (d.tile_extent.has_value()) {
      auto e = DimensionValue(d.type, *d.tile_extent);
      if (!e.ok()) return ctx(e.error());
      extent = *e;
    } else {
      extent = *hi - *lo + 1;
    }
    if (extent <= 0 || extent > static_cast<__int128>(UINT64_MAX)) {
      return ctx(Error::Corrupt(
          fmt::format("tile extent {} is not positive", static_cast<long long>(extent))));
    }
    if (*nlo < *lo || *nhi < *nlo) {
      return ctx(Error::Corrupt(
          fmt::format("non-empty domain [{}, {}] does not start inside the domain [{}, {}]",
                      static_cast<long long>(*nlo), static_cast<long long>(*nhi),
                      static_cast<long long>(*lo), static_cast<long long>(*hi))));
    }
    const __int128 first = (*nlo - *lo) / extent;
    const __int128 last = (*nhi - *lo) / extent;
    const __int128 count = last - first + 1;
    if (count > static_cast<__int128>(UINT64_MAX)) {
      return ctx(Error::Corrupt("tile count overflows"));
    }
    g.first_tile.push_back(static_cast<uint64_t>(first));
    g.tiles_per_dim.push_back(static_cast<uint64_t>(count));
    g.extents.push_back(static_cast<uint64_t>(extent));
    if (MulOverflow(g.tile_num, static_cast<uint64_t>(count), &g.tile_num) ||
        MulOverflow(g.cells_per_tile, static_cast<uint64_t>(extent), &g.cells_per_tile)) {
      return ctx(Error::Corrupt("tile or cell count overflows uint64"));
    }
  }
  return g;
}

}  // namespace tiledbfs::core
