#include "core/fragment/fragment_sections.h"

#include <fmt/format.h>

namespace tiledbfs::core {
namespace {

Status ExpectEnd(const ByteReader& r, std::string_view what) {
  if (r.empty()) return Ok();
  return r.Corrupt(what, fmt::format("{} unexpected trailing bytes", r.remaining()));
}

// Smallest number of bytes one MBR can take: bounds an MBR count read from
// disk before anything is reserved for it.
uint64_t MinMbrBytes(const ArraySchema& schema, uint32_t version) {
  uint64_t n = 0;
  for (const auto& d : schema.dimensions) {
    n += (d.var() && HasPerDimensionFiles(version)) ? 16 : 2 * CoordSize(d);
  }
  return n == 0 ? 1 : n;
}

}  // namespace

Result<std::vector<uint64_t>> ParseUint64List(Bytes payload, uint64_t file_offset,
                                              std::string_view what) {
  ByteReader r(payload, file_offset);
  ASSIGN_OR_RETURN(uint64_t count, r.Read<uint64_t>(what));
  if (count > r.remaining() / 8) {
    return r.Corrupt(
        what, fmt::format("count {} needs more than the {} bytes left", count, r.remaining()));
  }
  std::vector<uint64_t> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(uint64_t v, r.Read<uint64_t>(what));
    out.push_back(v);
  }
  TRY(ExpectEnd(r, what));
  return out;
}

Result<std::vector<std::vector<Range>>> ParseRTreeLeaves(Bytes payload, uint64_t file_offset,
                                                         const ArraySchema& schema,
                                                         uint32_t version) {
  if (schema.dimensions.empty()) {
    return Error::Corrupt(fmt::format("schema {} has no dimensions", schema.name));
  }
  ByteReader r(payload, file_offset);
  const bool legacy = !HasPerDimensionFiles(version);
  if (legacy) TRY(r.Skip(4, "R-tree: dimension num"));
  TRY(r.Read<uint32_t>("R-tree: fanout"));
  if (legacy) TRY(r.Skip(1, "R-tree: datatype"));
  ASSIGN_OR_RETURN(uint32_t levels, r.Read<uint32_t>("R-tree: level num"));
  const uint64_t min_mbr = MinMbrBytes(schema, version);
  std::vector<std::vector<Range>> leaves;
  for (uint32_t l = 0; l < levels; ++l) {
    ASSIGN_OR_RETURN(uint64_t count, r.Read<uint64_t>("R-tree: MBR num"));
    if (count > r.remaining() / min_mbr) {
      return r.Corrupt("R-tree: MBR num", fmt::format("{} MBRs cannot fit in the {} bytes left",
                                                      count, r.remaining()));
    }
    std::vector<std::vector<Range>> level;
    level.reserve(count);
    for (uint64_t m = 0; m < count; ++m) {
      if (legacy) {
        ASSIGN_OR_RETURN(auto mbr, ReadFixedNdRange(r, schema, false, "R-tree: MBR"));
        level.push_back(std::move(mbr));
      } else {
        ASSIGN_OR_RETURN(auto mbr, ReadNdRange(r, schema, "R-tree: MBR"));
        level.push_back(std::move(mbr));
      }
    }
    leaves = std::move(level);  // levels run from the root to the leaves
  }
  TRY(ExpectEnd(r, "R-tree"));
  return leaves;
}

Result<std::vector<ByteVec>> ParseTileMinMax(Bytes payload, uint64_t file_offset, bool var,
                                             uint64_t cell_size, std::string_view what) {
  ByteReader r(payload, file_offset);
  ASSIGN_OR_RETURN(uint64_t fixed_size, r.Read<uint64_t>(what));
  ASSIGN_OR_RETURN(uint64_t var_size, r.Read<uint64_t>(what));
  const uint64_t data_offset = r.offset();
  ASSIGN_OR_RETURN(Bytes fixed, r.ReadBytes(fixed_size, what));
  // TileDB writes the var buffer only when the fixed one is not empty.
  Bytes var_data;
  if (fixed_size != 0) {
    ASSIGN_OR_RETURN(var_data, r.ReadBytes(var_size, what));
  } else if (var_size != 0) {
    return Error::Corrupt(fmt::format("offset {}: {}: var buffer of {} bytes without values",
                                      file_offset, what, var_size));
  }
  TRY(ExpectEnd(r, what));
  std::vector<ByteVec> out;
  const uint64_t unit = var ? 8 : cell_size;
  if (unit == 0 || fixed_size % unit != 0) {
    return Error::Corrupt(fmt::format("offset {}: {}: {} bytes are not whole values of {} bytes",
                                      data_offset, what, fixed_size, unit));
  }
  const uint64_t count = fixed_size / unit;
  out.reserve(count);
  if (!var) {
    for (uint64_t i = 0; i < count; ++i) {
      auto v = fixed.subspan(i * unit, unit);
      out.emplace_back(v.begin(), v.end());
    }
    return out;
  }
  ByteReader offsets_reader(fixed, data_offset);
  std::vector<uint64_t> starts;
  starts.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(uint64_t start, offsets_reader.Read<uint64_t>(what));
    starts.push_back(start);
  }
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t start = starts[i];
    const uint64_t end = i + 1 < count ? starts[i + 1] : var_size;
    if (start > end || end > var_size) {
      return Error::Corrupt(
          fmt::format("offset {}: {}: value {} spans [{}, {}) outside the {} var bytes",
                      data_offset + i * 8, what, i, start, end, var_size));
    }
    auto v = var_data.subspan(start, end - start);
    out.emplace_back(v.begin(), v.end());
  }
  return out;
}

Result<std::vector<FragmentStats>> ParseFragmentStats(Bytes payload, uint64_t file_offset,
                                                      uint64_t field_count) {
  ByteReader r(payload, file_offset);
  // Each field takes at least 32 bytes.
  if (field_count > payload.size() / 32) {
    return Error::Corrupt(
        fmt::format("offset {}: fragment statistics: {} fields cannot fit in {} bytes (truncated)",
                    file_offset, field_count, payload.size()));
  }
  std::vector<FragmentStats> out(field_count);
  for (auto& s : out) {
    ASSIGN_OR_RETURN(uint64_t min_size, r.Read<uint64_t>("fragment statistics: min size"));
    ASSIGN_OR_RETURN(Bytes min, r.ReadBytes(min_size, "fragment statistics: min"));
    ASSIGN_OR_RETURN(uint64_t max_size, r.Read<uint64_t>("fragment statistics: max size"));
    ASSIGN_OR_RETURN(Bytes max, r.ReadBytes(max_size, "fragment statistics: max"));
    ASSIGN_OR_RETURN(s.sum, r.Read<uint64_t>("fragment statistics: sum"));
    ASSIGN_OR_RETURN(s.null_count, r.Read<uint64_t>("fragment statistics: null count"));
    s.min.assign(min.begin(), min.end());
    s.max.assign(max.begin(), max.end());
  }
  TRY(ExpectEnd(r, "fragment statistics"));
  return out;
}

Result<std::vector<std::string>> ParseProcessedConditions(Bytes payload, uint64_t file_offset) {
  ByteReader r(payload, file_offset);
  ASSIGN_OR_RETURN(uint64_t count, r.Read<uint64_t>("processed conditions: count"));
  if (count > r.remaining() / 8) {
    return r.Corrupt("processed conditions: count",
                     fmt::format("{} conditions cannot fit in {} bytes", count, r.remaining()));
  }
  std::vector<std::string> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(uint64_t size, r.Read<uint64_t>("processed conditions: size"));
    ASSIGN_OR_RETURN(std::string name, r.ReadString(size, "processed conditions: name"));
    out.push_back(std::move(name));
  }
  TRY(ExpectEnd(r, "processed conditions"));
  return out;
}

}  // namespace tiledbfs::core
