#include "core/write/fragment_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>
#include <random>

#include "core/fragment/dense_tile_grid.h"
#include "core/write/cell_values.h"
#include "core/write/filter_writer.h"
#include "core/write/fragment_stream.h"
#include "core/write/schema_writer.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

uint64_t CellCount(const WriteField& f, const FieldCells& c) {
  return f.var ? c.offsets.size() : c.data.size() / f.cell_size;
}

Bytes CellOf(const WriteField& f, const FieldCells& c, uint64_t i) {
  if (!f.var) return Bytes(c.data.data() + i * f.cell_size, f.cell_size);
  uint64_t end = i + 1 < c.offsets.size() ? c.offsets[i + 1] : c.data.size();
  return Bytes(c.data.data() + c.offsets[i], end - c.offsets[i]);
}

// Checks that the batch holds every field with the same number of whole
// cells; returns them in the writer's field order.
Result<std::vector<const FieldCells*>> CheckBatch(const std::vector<WriteField>& fields,
                                                  const WriteBatch& batch) {
  std::vector<const FieldCells*> out;
  uint64_t n = UINT64_MAX;
  for (const WriteField& f : fields) {
    auto it = batch.fields.find(f.name);
    if (it == batch.fields.end()) {
      return Error::InvalidArgument(fmt::format("no values for field '{}'", f.name));
    }
    TRY(CheckWritablePipeline(*f.filters, f.type, f.var));
    const FieldCells& c = it->second;
    if (!f.var && c.data.size() % f.cell_size != 0) {
      return Error::InvalidArgument(fmt::format("field '{}': data is not whole cells", f.name));
    }
    const uint64_t cells = CellCount(f, c);
    if (f.var) {
      for (size_t i = 0; i < c.offsets.size(); ++i) {
        if (c.offsets[i] > c.data.size() || (i > 0 && c.offsets[i] < c.offsets[i - 1])) {
          return Error::InvalidArgument(
              fmt::format("field '{}': bad offset of cell {}", f.name, i));
        }
      }
    }
    if (f.nullable && c.validity.size() != cells) {
      return Error::InvalidArgument(fmt::format("field '{}': {} validity bytes for {} cells",
                                                f.name, c.validity.size(), cells));
    }
    if (n != UINT64_MAX && cells != n) {
      return Error::InvalidArgument(
          fmt::format("field '{}' has {} cells, other fields {}", f.name, cells, n));
    }
    n = cells;
    out.push_back(&c);
  }
  if (n == 0 || n == UINT64_MAX) return Error::InvalidArgument("a write needs at least one cell");
  return out;
}

// Dense: the batch's cells, row-major over the subarray, by coordinates.
class BatchSource : public CellSource {
 public:
  BatchSource(const ArraySchema& s, const std::vector<WriteField>& fields,
              const std::vector<const FieldCells*>& cells, const std::vector<Range>& sub)
      : fields_(fields), cells_(cells), lo_(s.dimensions.size()), stride_(s.dimensions.size(), 1) {
    const size_t D = s.dimensions.size();
    std::vector<__int128> hi(D);
    for (size_t d = 0; d < D; ++d) {
      // The subarray was checked by FragmentFileWriter::Open.
      lo_[d] = *DimensionValue(s.dimensions[d].type, sub[d].lo);
      hi[d] = *DimensionValue(s.dimensions[d].type, sub[d].hi);
    }
    total_ = 1;
    for (size_t d = D; d-- > 0;) {
      stride_[d] = total_;
      const unsigned __int128 w = static_cast<unsigned __int128>(hi[d] - lo_[d]) + 1;
      total_ = total_ * w > (static_cast<unsigned __int128>(1) << 64)
                   ? (static_cast<unsigned __int128>(1) << 64)
                   : total_ * w;
    }
  }
  Status CheckCellCount(uint64_t n) const {
    if (total_ != n) {
      return Error::InvalidArgument(fmt::format(
          "dense write of {} cells, but the subarray holds {}", n, static_cast<uint64_t>(total_)));
    }
    return Ok();
  }
  Status AppendRun(const __int128* coords, size_t dim, uint64_t count,
                   std::vector<TileBuf>& tiles) override {
    uint64_t src = 0;
    for (size_t d = 0; d < lo_.size(); ++d) {
      src += static_cast<uint64_t>(coords[d] - lo_[d]) * static_cast<uint64_t>(stride_[d]);
    }
    const uint64_t step = static_cast<uint64_t>(stride_[dim]);
    for (size_t k = 0; k < fields_.size(); ++k) {
      const WriteField& f = fields_[k];
      const FieldCells& c = *cells_[k];
      TileBuf& t = tiles[k];
      if (!f.var && step == 1) {
        const uint8_t* p = c.data.data() + src * f.cell_size;
        AppendBytes(t.data, p, count * f.cell_size);
        if (f.nullable) {
          AppendBytes(t.validity, c.validity.data() + src, count);
        }
        t.cells += count;
        continue;
      }
      for (uint64_t i = 0; i < count; ++i) {
        const uint64_t at = src + i * step;
        AppendCell(t, f, CellOf(f, c, at), f.nullable ? c.validity[at] : 1);
      }
    }
    return Ok();
  }

 private:
  const std::vector<WriteField>& fields_;
  const std::vector<const FieldCells*>& cells_;
  std::vector<__int128> lo_;
  std::vector<unsigned __int128> stride_;
  unsigned __int128 total_ = 0;
};

// Sparse: checks the domain and duplicates and returns the cells'
// permutation into the global order (space tile order, then cell order).
Result<std::vector<uint64_t>> SparseGlobalOrder(const ArraySchema& s,
                                                const std::vector<WriteField>& fields,
                                                const std::vector<const FieldCells*>& cells,
                                                uint64_t n) {
  const size_t D = s.dimensions.size();
  const size_t A = s.attributes.size();
  auto coord = [&](size_t d, uint64_t i) { return CellOf(fields[A + d], *cells[A + d], i); };
  // Per cell and dimension: the space tile index (fixed dims with extents).
  std::vector<std::vector<double>> tile_id(D);
  for (size_t d = 0; d < D; ++d) {
    const Dimension& dd = s.dimensions[d];
    if (dd.var()) continue;
    Num lo = LoadNum(dd.type, dd.domain.lo.data()), hi = LoadNum(dd.type, dd.domain.hi.data());
    std::optional<Num> ext;
    if (dd.tile_extent) ext = LoadNum(dd.type, dd.tile_extent->data());
    tile_id[d].resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      Num v = LoadNum(dd.type, coord(d, i).data());
      bool out = false;
      long double pos = 0, e = 1;
      if (v.kind == Num::kSigned) {
        out = v.i < lo.i || v.i > hi.i;
        pos = static_cast<long double>(v.i) - lo.i;
        if (ext) e = ext->i;
      } else if (v.kind == Num::kUnsigned) {
        out = v.u < lo.u || v.u > hi.u;
        pos = static_cast<long double>(v.u - lo.u);
        if (ext) e = ext->u;
      } else if (v.kind == Num::kFloat) {
        out = !(v.d >= lo.d && v.d <= hi.d);
        pos = v.d - lo.d;
        if (ext) e = ext->d;
      }
      if (out) {
        return Error::InvalidArgument(
            fmt::format("cell {}: coordinate of '{}' is outside the domain", i + 1, dd.name));
      }
      tile_id[d][i] = ext ? static_cast<double>(std::floor(pos / e)) : 0.0;
    }
  }
  if (s.cell_order == Layout::kHilbert) {
    return Error::Unsupported("writing arrays with hilbert cell order is not supported yet");
  }
  std::vector<uint64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  auto dims_in = [&](Layout order) {
    std::vector<size_t> v(D);
    std::iota(v.begin(), v.end(), 0);
    if (order == Layout::kColMajor) std::reverse(v.begin(), v.end());
    return v;
  };
  const auto tile_dims = dims_in(s.tile_order), cell_dims = dims_in(s.cell_order);
  auto cmp_coords = [&](uint64_t a, uint64_t b) {
    for (size_t d : cell_dims) {
      int c = CompareCells(s.dimensions[d].type, !s.dimensions[d].var(), coord(d, a), coord(d, b));
      if (c != 0) return c;
    }
    return 0;
  };
  std::stable_sort(perm.begin(), perm.end(), [&](uint64_t a, uint64_t b) {
    for (size_t d : tile_dims) {
      if (tile_id[d].empty()) continue;
      if (tile_id[d][a] != tile_id[d][b]) return tile_id[d][a] < tile_id[d][b];
    }
    return cmp_coords(a, b) < 0;
  });
  if (!s.allows_dups) {
    for (uint64_t i = 1; i < n; ++i) {
      if (cmp_coords(perm[i - 1], perm[i]) == 0) {
        return Error::InvalidArgument(fmt::format(
            "cells {} and {} have the same coordinates and the array does not allow duplicates",
            perm[i - 1] + 1, perm[i] + 1));
      }
    }
  }
  return perm;
}

Status WriteFile(const fs::path& p, Bytes b) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (!f) return Error::Io(fmt::format("cannot create {}", p.string()));
  bool ok = b.empty() || std::fwrite(b.data(), 1, b.size(), f) == b.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) return Error::Io(fmt::format("cannot write {}", p.string()));
  return Ok();
}

}  // namespace

std::string NewTimestampedName(uint64_t timestamp, uint32_t version) {
  return NewTimestampedName(timestamp, timestamp, version);
}

std::string NewTimestampedName(uint64_t t1, uint64_t t2, uint32_t version) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string uuid = fmt::format("{:016x}{:016x}", rng(), rng());
  std::string name = fmt::format("__{}_{}_{}", t1, t2, uuid);
  if (version != 0) name += fmt::format("_{}", version);
  return name;
}

Result<std::string> CreateArray(const std::string& array_dir, const ArraySchema& schema,
                                uint64_t timestamp, const Limits& limits) {
  std::error_code ec;
  fs::path dir(array_dir);
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) {
    return Error::InvalidArgument(fmt::format("{} exists and is not empty", array_dir));
  }
  ASSIGN_OR_RETURN(ByteVec payload, SerializeArraySchema(schema, limits));
  ASSIGN_OR_RETURN(ByteVec tile, EncodeGenericTile(payload, kWriteFormatVersion));
  for (const char* sub : {"__schema", "__commits", "__fragments"}) {
    fs::create_directories(dir / sub, ec);
    if (ec) return Error::Io(fmt::format("cannot create {}/{}: {}", array_dir, sub, ec.message()));
  }
  std::string name = NewTimestampedName(timestamp, 0);
  TRY(WriteFile(dir / "__schema" / name, tile));
  return name;
}

Result<std::string> WriteFragment(const std::string& array_dir, const ArraySchema& schema,
                                  uint64_t timestamp, const WriteBatch& batch) {
  return WriteFragment(array_dir, schema, timestamp, timestamp, batch);
}

Result<std::string> WriteFragment(const std::string& array_dir, const ArraySchema& schema,
                                  uint64_t t1, uint64_t t2, const WriteBatch& batch) {
  if (schema.name.empty()) return Error::InvalidArgument("the schema has no file name");
  if (t1 > t2) return Error::InvalidArgument(fmt::format("timestamps {} > {}", t1, t2));
  std::vector<WriteField> fields = FragmentFields(schema);
  ASSIGN_OR_RETURN(std::vector<const FieldCells*> cells, CheckBatch(fields, batch));
  const uint64_t n = CellCount(fields[0], *cells[0]);
  if (schema.dense()) {
    return WriteStreamedFragment(array_dir, schema, t1, t2, batch.subarray,
                                 [&](FragmentFileWriter& w) -> Status {
                                   BatchSource src(w.schema(), fields, cells, batch.subarray);
                                   TRY(src.CheckCellCount(n));
                                   return WriteDenseTiles(w, batch.subarray, src);
                                 });
  }
  ASSIGN_OR_RETURN(std::vector<uint64_t> perm, SparseGlobalOrder(schema, fields, cells, n));
  return WriteStreamedFragment(array_dir, schema, t1, t2, {}, [&](FragmentFileWriter& w) -> Status {
    std::vector<TileBuf>& tiles = w.tile();
    for (uint64_t src : perm) {
      for (size_t k = 0; k < fields.size(); ++k) {
        const FieldCells& c = *cells[k];
        AppendCell(tiles[k], fields[k], CellOf(fields[k], c, src),
                   fields[k].nullable ? c.validity[src] : 1);
      }
      TRY(w.SparseCellAdded());
    }
    return Ok();
  });
}

}  // namespace tiledbfs::core
