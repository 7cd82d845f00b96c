// tiledb-mkarray: creates TileDB arrays and writes fragments into them.
//
//   tiledb-mkarray create ARRAY --schema schema.json [--timestamp T]
//   tiledb-mkarray write ARRAY --timestamp T --csv FILE
//   tiledb-mkarray write ARRAY --timestamp T --synthetic SEED
//                  [--subarray LO:HI,LO:HI...] (dense; default: the domain)
//                  [--cells N] (sparse; default 1000)
//
// The schema.json form is the one the mount shows (SchemaToJson). A CSV has
// a header row naming fields; dense arrays: the dimensions then the
// attributes, rows covering a rectangular subarray fully in row-major order;
// sparse arrays: any cells. Empty fields of nullable attributes are null;
// several values of a fixed cell are separated by spaces.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/schema/array_schema.h"
#include "core/storage/storage.h"
#include "core/write/fragment_writer.h"
#include "core/write/schema_writer.h"

using namespace tiledbfs::core;

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: tiledb-mkarray create ARRAY --schema schema.json [--timestamp T]\n"
               "       tiledb-mkarray write ARRAY --timestamp T --csv FILE\n"
               "       tiledb-mkarray write ARRAY --timestamp T --synthetic SEED\n"
               "                      [--subarray LO:HI,...] [--cells N]\n");
  return 2;
}

uint64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::NotFound("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Splits one CSV line (RFC 4180 quotes, "" inside quotes).
Result<std::vector<std::string>> SplitCsv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  if (quoted) return Error::InvalidArgument("unterminated quote");
  return out;
}

// One value of a fixed-size type from text.
Result<ByteVec> ParseValue(Datatype t, const std::string& s) {
  ByteVec out(DatatypeSize(t));
  errno = 0;
  char* end = nullptr;
  if (IsFloat(t)) {
    double d = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0') return Error::InvalidArgument("'" + s + "' is not a number");
    if (t == Datatype::kFloat32) {
      float f = static_cast<float>(d);
      std::memcpy(out.data(), &f, 4);
    } else {
      std::memcpy(out.data(), &d, 8);
    }
    return out;
  }
  bool is_unsigned = t == Datatype::kUInt8 || t == Datatype::kUInt16 || t == Datatype::kUInt32 ||
                     t == Datatype::kUInt64 || t == Datatype::kBool;
  if (IsInteger(t) || IsDatetime(t) || IsTime(t) || t == Datatype::kBool) {
    if (is_unsigned) {
      if (!s.empty() && s[0] == '-') return Error::InvalidArgument("'" + s + "' is negative");
      unsigned long long v = std::strtoull(s.c_str(), &end, 10);
      uint64_t max = out.size() == 8 ? UINT64_MAX : (uint64_t{1} << (8 * out.size())) - 1;
      if (s.empty() || *end != '\0' || errno == ERANGE || v > max) {
        return Error::InvalidArgument("'" + s + "' is not a " + std::string(DatatypeName(t)));
      }
      uint64_t u = v;
      std::memcpy(out.data(), &u, out.size());
    } else {
      long long v = std::strtoll(s.c_str(), &end, 10);
      int64_t lo = out.size() == 8 ? INT64_MIN : -(int64_t{1} << (8 * out.size() - 1));
      int64_t hi = out.size() == 8 ? INT64_MAX : (int64_t{1} << (8 * out.size() - 1)) - 1;
      if (s.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
        return Error::InvalidArgument("'" + s + "' is not a " + std::string(DatatypeName(t)));
      }
      int64_t i = v;
      std::memcpy(out.data(), &i, out.size());
    }
    return out;
  }
  return Error::Unsupported("values of type " + std::string(DatatypeName(t)) +
                            " cannot be given in CSV yet");
}

// Appends one CSV field to a field's cells.
Status AppendField(FieldCells& c, Datatype t, uint32_t cvn, bool nullable, const ByteVec& fill,
                   const std::string& text) {
  const bool var = cvn == kVarNum;
  const bool is_null = nullable && text.empty();
  if (nullable) c.validity.push_back(is_null ? 0 : 1);
  if (var) c.offsets.push_back(c.data.size());
  if (is_null) {
    c.data.insert(c.data.end(), fill.begin(), fill.end());
    return Ok();
  }
  if (IsString(t) || IsBlobLike(t)) {
    if (!var && text.size() != uint64_t{cvn} * DatatypeSize(t)) {
      return Error::InvalidArgument(fmt::format("'{}' must be {} bytes", text, cvn));
    }
    c.data.insert(c.data.end(), text.begin(), text.end());
    return Ok();
  }
  std::vector<std::string> parts;
  if (cvn == 1) {
    parts.push_back(text);
  } else {
    std::istringstream ss(text);
    std::string p;
    while (ss >> p) parts.push_back(p);
    if (!var && parts.size() != cvn) {
      return Error::InvalidArgument(fmt::format("'{}' must hold {} values", text, cvn));
    }
  }
  for (const std::string& p : parts) {
    ASSIGN_OR_RETURN(ByteVec v, ParseValue(t, p));
    c.data.insert(c.data.end(), v.begin(), v.end());
  }
  return Ok();
}

Result<ArraySchema> LatestSchema(const std::string& array) {
  ASSIGN_OR_RETURN(auto storage, LocalStorage::Open(array));
  ASSIGN_OR_RETURN(std::vector<DirEntry> entries, storage->List("__schema"));
  std::string newest;
  for (const DirEntry& e : entries) {
    if (!e.is_dir && e.name.rfind("__", 0) == 0 && e.name > newest) newest = e.name;
  }
  if (newest.empty()) return Error::NotFound(array + ": no schema in __schema/");
  return LoadArraySchema(*storage, "__schema/" + newest, nullptr);
}

Status WriteCsv(const std::string& array, uint64_t timestamp, const std::string& csv_path) {
  ASSIGN_OR_RETURN(ArraySchema s, LatestSchema(array));
  ASSIGN_OR_RETURN(std::string text, ReadText(csv_path));
  std::istringstream in(text);
  std::string line;
  uint64_t lineno = 0;
  std::vector<std::string> header;
  struct Col {
    std::string name;
    Datatype type;
    uint32_t cvn;
    bool nullable;
    ByteVec fill;
    int dim;  // dimension index or -1
  };
  std::vector<Col> cols;
  WriteBatch batch;
  std::vector<std::vector<ByteVec>> dense_coords;  // dense: per row, per dim
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto fields = SplitCsv(line);
    if (!fields.ok()) {
      return Error::InvalidArgument(
          fmt::format("{}:{}: {}", csv_path, lineno, fields.error().message()));
    }
    if (cols.empty()) {
      for (const std::string& name : *fields) {
        int d = s.DimensionIndex(name), a = s.AttributeIndex(name);
        if (d >= 0) {
          const Dimension& dd = s.dimensions[d];
          cols.push_back({name, dd.type, dd.cell_val_num, false, {}, d});
        } else if (a >= 0) {
          const Attribute& aa = s.attributes[a];
          cols.push_back({name, aa.type, aa.cell_val_num, aa.nullable, aa.fill_value, -1});
        } else {
          return Error::InvalidArgument(
              fmt::format("{}:{}: '{}' is not a dimension or attribute", csv_path, lineno, name));
        }
      }
      for (const Dimension& d : s.dimensions) {
        bool found = false;
        for (const Col& c : cols) found |= c.name == d.name;
        if (!found) {
          return Error::InvalidArgument(
              fmt::format("{}:{}: the header lacks dimension '{}'", csv_path, lineno, d.name));
        }
      }
      continue;
    }
    if (fields->size() != cols.size()) {
      return Error::InvalidArgument(fmt::format("{}:{}: {} fields, the header has {}", csv_path,
                                                lineno, fields->size(), cols.size()));
    }
    std::vector<ByteVec> coords(s.dimensions.size());
    for (size_t i = 0; i < cols.size(); ++i) {
      const Col& c = cols[i];
      const std::string& f = (*fields)[i];
      if (c.dim >= 0 && s.dense()) {
        auto v = ParseValue(c.type, f);
        if (!v.ok()) {
          return Error::InvalidArgument(
              fmt::format("{}:{}: field '{}': {}", csv_path, lineno, c.name, v.error().message()));
        }
        coords[c.dim] = *v;
        continue;
      }
      Status st = AppendField(batch.fields[c.name], c.type, c.cvn, c.nullable, c.fill, f);
      if (!st.ok()) {
        return Error::InvalidArgument(
            fmt::format("{}:{}: field '{}': {}", csv_path, lineno, c.name, st.error().message()));
      }
      if (c.dim >= 0 && !s.dimensions[c.dim].var()) {
        const Dimension& d = s.dimensions[c.dim];
        const ByteVec& all = batch.fields[c.name].data;
        Bytes v(all.data() + all.size() - DatatypeSize(d.type), DatatypeSize(d.type));
        // Checked here too (the writer checks again) to report the line.
        auto num = [&](Bytes b) {
          double x = 0;
          if (d.type == Datatype::kFloat64) {
            std::memcpy(&x, b.data(), 8);
            return (long double)x;
          }
          if (d.type == Datatype::kFloat32) {
            float y;
            std::memcpy(&y, b.data(), 4);
            return (long double)y;
          }
          if (d.type == Datatype::kUInt64) {
            uint64_t u;
            std::memcpy(&u, b.data(), 8);
            return (long double)u;
          }
          int64_t i = 0;
          std::memcpy(&i, b.data(), b.size());
          if (b.size() < 8) i = (i << (64 - 8 * b.size())) >> (64 - 8 * b.size());
          return (long double)i;
        };
        if (num(v) < num(d.domain.lo) || num(v) > num(d.domain.hi)) {
          return Error::InvalidArgument(
              fmt::format("{}:{}: {} = {} is outside the domain", csv_path, lineno, c.name, f));
        }
      }
    }
    if (s.dense()) dense_coords.push_back(std::move(coords));
  }
  if (cols.empty()) return Error::InvalidArgument(csv_path + ": no header row");
  if (s.dense()) {
    if (dense_coords.empty()) return Error::InvalidArgument(csv_path + ": no cells");
    // The subarray is the bounding box; rows must enumerate it row-major.
    const size_t D = s.dimensions.size();
    std::vector<int64_t> lo(D), hi(D);
    auto as_int = [&](size_t d, const ByteVec& b) {
      int64_t i = 0;
      std::memcpy(&i, b.data(), b.size());
      uint64_t sz = b.size();
      bool is_signed =
          s.dimensions[d].type != Datatype::kUInt8 && s.dimensions[d].type != Datatype::kUInt16 &&
          s.dimensions[d].type != Datatype::kUInt32 && s.dimensions[d].type != Datatype::kUInt64;
      if (sz < 8 && is_signed) i = (i << (64 - 8 * sz)) >> (64 - 8 * sz);
      return i;
    };
    for (size_t d = 0; d < D; ++d) {
      lo[d] = hi[d] = as_int(d, dense_coords[0][d]);
      for (const auto& c : dense_coords) {
        lo[d] = std::min(lo[d], as_int(d, c[d]));
        hi[d] = std::max(hi[d], as_int(d, c[d]));
      }
    }
    std::vector<int64_t> cur = lo;
    for (size_t k = 0; k < dense_coords.size(); ++k) {
      for (size_t d = 0; d < D; ++d) {
        if (as_int(d, dense_coords[k][d]) != cur[d]) {
          return Error::InvalidArgument(fmt::format(
              "{}: cell {} (data row {}) is not the next cell of the subarray in row-major order",
              csv_path, k + 1, k + 1));
        }
      }
      for (size_t d = D; d-- > 0;) {
        if (++cur[d] <= hi[d]) break;
        cur[d] = lo[d];
        if (d == 0) cur[0] = hi[0] + 1;
      }
    }
    if (cur[0] != hi[0] + 1) {
      return Error::InvalidArgument(csv_path + ": the rows do not cover a rectangular subarray");
    }
    for (size_t d = 0; d < D; ++d) {
      batch.subarray.push_back(Range{});
      const ByteVec& lo_b = dense_coords.front()[d];
      const ByteVec& hi_b = dense_coords.back()[d];
      batch.subarray.back().lo = lo_b;
      batch.subarray.back().hi = hi_b;
    }
  }
  ASSIGN_OR_RETURN(std::string name, WriteFragment(array, s, timestamp, batch));
  std::printf("%s\n", name.c_str());
  return Ok();
}

// Deterministic pseudo-random numbers: splitmix64 of (seed, stream, index).
uint64_t Mix(uint64_t seed, uint64_t stream, uint64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + stream * 0xBF58476D1CE4E5B9ull + i + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string Word(uint64_t h) {
  std::string s(h % 13, 'a');
  for (size_t k = 0; k < s.size(); ++k) s[k] = static_cast<char>('a' + (h >> (5 + 3 * k)) % 26);
  return s;
}

// One synthetic value of a fixed-size type (numbers; text types: letters).
ByteVec SyntheticValue(Datatype t, uint64_t h) {
  ByteVec out(DatatypeSize(t));
  if (IsFloat(t)) {
    double d = static_cast<double>(h >> 11) * 0x1.0p-53 * 2000.0 - 1000.0;
    if (t == Datatype::kFloat32) {
      float f = static_cast<float>(d);
      std::memcpy(out.data(), &f, 4);
    } else {
      std::memcpy(out.data(), &d, 8);
    }
  } else if (IsString(t)) {
    for (auto& b : out) b = static_cast<uint8_t>('a' + (h >>= 5) % 26);
  } else if (t == Datatype::kBool) {
    out[0] = h & 1;
  } else {
    std::memcpy(out.data(), &h, out.size());
  }
  return out;
}

// A coordinate uniformly in [lo, hi] of an integer or float dimension.
ByteVec SyntheticCoord(const Dimension& d, uint64_t h) {
  ByteVec out(DatatypeSize(d.type));
  if (IsFloat(d.type)) {
    double lo, hi, u = static_cast<double>(h >> 11) * 0x1.0p-53;
    if (d.type == Datatype::kFloat32) {
      float l, g;
      std::memcpy(&l, d.domain.lo.data(), 4);
      std::memcpy(&g, d.domain.hi.data(), 4);
      float v = std::min(g, static_cast<float>(l + u * (static_cast<double>(g) - l)));
      std::memcpy(out.data(), &v, 4);
      return out;
    }
    std::memcpy(&lo, d.domain.lo.data(), 8);
    std::memcpy(&hi, d.domain.hi.data(), 8);
    double v = std::min(hi, lo + u * (hi - lo));
    std::memcpy(out.data(), &v, 8);
    return out;
  }
  // Integers: offset from lo modulo the domain's width (two's complement).
  uint64_t lo = 0, hi = 0;
  std::memcpy(&lo, d.domain.lo.data(), out.size());
  std::memcpy(&hi, d.domain.hi.data(), out.size());
  uint64_t mask = out.size() == 8 ? UINT64_MAX : (uint64_t{1} << (8 * out.size())) - 1;
  uint64_t width = (hi - lo) & mask;
  uint64_t v = lo + (width == UINT64_MAX ? h : h % (width + 1));
  std::memcpy(out.data(), &v, out.size());
  return out;
}

void AppendSynthetic(FieldCells& c, const Attribute& a, uint64_t h) {
  if (a.nullable) c.validity.push_back(h % 10 != 0);
  uint64_t g = Mix(h, 1, 0);
  if (a.var()) {
    c.offsets.push_back(c.data.size());
    if (IsString(a.type) || IsBlobLike(a.type)) {
      std::string w = Word(g);
      c.data.insert(c.data.end(), w.begin(), w.end());
    } else {
      for (uint64_t k = 0; k < g % 4; ++k) {
        ByteVec v = SyntheticValue(a.type, Mix(g, 2, k));
        c.data.insert(c.data.end(), v.begin(), v.end());
      }
    }
    return;
  }
  for (uint32_t k = 0; k < a.cell_val_num; ++k) {
    ByteVec v = SyntheticValue(a.type, Mix(g, 3, k));
    c.data.insert(c.data.end(), v.begin(), v.end());
  }
}

Status WriteSynthetic(const std::string& array, uint64_t timestamp,
                      std::map<std::string, std::string>& opt) {
  ASSIGN_OR_RETURN(ArraySchema s, LatestSchema(array));
  const uint64_t seed = std::strtoull(opt["--synthetic"].c_str(), nullptr, 10);
  WriteBatch batch;
  uint64_t n = 0;
  if (s.dense()) {
    std::vector<std::pair<long long, long long>> sub;
    if (opt.count("--subarray")) {
      std::istringstream ss(opt["--subarray"]);
      std::string part;
      while (std::getline(ss, part, ',')) {
        long long lo = 0, hi = 0;
        if (std::sscanf(part.c_str(), "%lld:%lld", &lo, &hi) != 2) {
          return Error::InvalidArgument("--subarray: '" + part + "' is not LO:HI");
        }
        sub.push_back({lo, hi});
      }
      if (sub.size() != s.dimensions.size()) {
        return Error::InvalidArgument("--subarray needs one LO:HI per dimension");
      }
    }
    n = 1;
    for (size_t d = 0; d < s.dimensions.size(); ++d) {
      const Dimension& dim = s.dimensions[d];
      Range r = dim.domain;
      if (!sub.empty()) {
        ASSIGN_OR_RETURN(r.lo, ParseValue(dim.type, std::to_string(sub[d].first)));
        ASSIGN_OR_RETURN(r.hi, ParseValue(dim.type, std::to_string(sub[d].second)));
      }
      int64_t lo = 0, hi = 0;
      std::memcpy(&lo, r.lo.data(), r.lo.size());
      std::memcpy(&hi, r.hi.data(), r.hi.size());
      uint64_t w = (static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo)) &
                   (r.lo.size() == 8 ? UINT64_MAX : (uint64_t{1} << (8 * r.lo.size())) - 1);
      if (w >= (uint64_t{1} << 40) / n) return Error::InvalidArgument("subarray too large");
      n *= w + 1;
      batch.subarray.push_back(r);
    }
  } else {
    n = opt.count("--cells") ? std::strtoull(opt["--cells"].c_str(), nullptr, 10) : 1000;
    if (n == 0) return Error::InvalidArgument("--cells must be positive");
    std::set<ByteVec> seen;
    uint64_t tries = 0;
    for (uint64_t i = 0; i < n; ++tries) {
      if (tries > 20 * n + 1000) {
        return Error::InvalidArgument("the domain is too small for that many distinct cells");
      }
      ByteVec key;
      std::vector<ByteVec> coords;
      for (size_t d = 0; d < s.dimensions.size(); ++d) {
        const Dimension& dim = s.dimensions[d];
        uint64_t h = Mix(seed, 100 + d, tries);
        ByteVec c;
        if (dim.var()) {
          std::string w = Word(h);
          c.assign(w.begin(), w.end());
        } else {
          c = SyntheticCoord(dim, h);
        }
        key.insert(key.end(), c.begin(), c.end());
        key.push_back(0xFF);
        coords.push_back(std::move(c));
      }
      if (!s.allows_dups && !seen.insert(key).second) continue;
      for (size_t d = 0; d < s.dimensions.size(); ++d) {
        FieldCells& fc = batch.fields[s.dimensions[d].name];
        if (s.dimensions[d].var()) fc.offsets.push_back(fc.data.size());
        fc.data.insert(fc.data.end(), coords[d].begin(), coords[d].end());
      }
      ++i;
    }
  }
  for (size_t a = 0; a < s.attributes.size(); ++a) {
    FieldCells& fc = batch.fields[s.attributes[a].name];
    for (uint64_t i = 0; i < n; ++i) AppendSynthetic(fc, s.attributes[a], Mix(seed, a, i));
  }
  ASSIGN_OR_RETURN(std::string name, WriteFragment(array, s, timestamp, batch));
  std::printf("%s\n", name.c_str());
  return Ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  std::string cmd = argv[1], array = argv[2];
  std::map<std::string, std::string> opt;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) return Usage();
    opt[a] = argv[++i];
  }
  uint64_t ts = NowMs();
  if (opt.count("--timestamp")) ts = std::strtoull(opt["--timestamp"].c_str(), nullptr, 10);
  Status st;
  if (cmd == "create") {
    if (!opt.count("--schema")) return Usage();
    auto text = ReadText(opt["--schema"]);
    if (!text.ok()) {
      st = text.error();
    } else {
      auto schema = SchemaFromJson(*text);
      if (!schema.ok()) {
        st = schema.error();
      } else {
        auto name = CreateArray(array, *schema, ts);
        if (!name.ok()) st = name.error();
      }
    }
  } else if (cmd == "write") {
    if (!opt.count("--timestamp") || opt.count("--csv") == opt.count("--synthetic")) {
      return Usage();
    }
    st = opt.count("--csv") ? WriteCsv(array, ts, opt["--csv"]) : WriteSynthetic(array, ts, opt);
  } else {
    return Usage();
  }
  if (!st.ok()) {
    std::fprintf(stderr, "tiledb-mkarray: %s\n", st.error().ToString().c_str());
    return 1;
  }
  return 0;
}
