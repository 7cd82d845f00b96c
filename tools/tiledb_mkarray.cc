// tiledb-mkarray: creates TileDB arrays and writes fragments into them.
//
//   tiledb-mkarray create ARRAY --schema schema.json [--timestamp T]
//   tiledb-mkarray write ARRAY --timestamp T --csv FILE
//   tiledb-mkarray write ARRAY --timestamp T --synthetic SEED
//                  [--subarray LO:HI,LO:HI...] (default: the domain)
//                  [--cells N|MIN:MAX] (sparse, per fragment; default 1000)
//                  [--fragments N] (N row bands of the subarray, one fragment
//                  each, at timestamps T, T+1, ...; default 1)
//     Values depend only on (SEED, attribute, coordinates); sparse cells are
//     generated in the global order, fragment by fragment, streamed.
//   tiledb-mkarray meta ARRAY [--timestamp T] put KEY TYPE VALUES...
//   tiledb-mkarray meta ARRAY [--timestamp T] delete KEY
//   tiledb-mkarray consolidate-metadata ARRAY
//   tiledb-mkarray consolidate ARRAY [--without-timestamps]
//   tiledb-mkarray vacuum ARRAY
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
#include "core/write/consolidation.h"
#include "core/write/fragment_writer.h"
#include "core/write/metadata_writer.h"
#include "core/write/schema_writer.h"
#include "core/write/synthetic.h"

using namespace tiledbfs::core;

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: tiledb-mkarray create ARRAY --schema schema.json [--timestamp T]\n"
               "       tiledb-mkarray write ARRAY --timestamp T --csv FILE\n"
               "       tiledb-mkarray write ARRAY --timestamp T --synthetic SEED\n"
               "                      [--subarray LO:HI,...] [--cells N|MIN:MAX] [--fragments N]\n"
               "       tiledb-mkarray meta ARRAY [--timestamp T] put KEY TYPE VALUES...\n"
               "       tiledb-mkarray meta ARRAY [--timestamp T] delete KEY\n"
               "       tiledb-mkarray consolidate-metadata ARRAY\n"
               "       tiledb-mkarray consolidate ARRAY [--without-timestamps]\n"
               "       tiledb-mkarray vacuum ARRAY\n");
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
  ByteVec out(DatatypeSize(t), 0);
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
  return LoadArraySchema(*storage, "__schema/" + newest, nullptr, DefaultLimits());
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

Result<uint64_t> ParseCount(const std::string& option, const std::string& s) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || *end != '\0' || errno == ERANGE) {
    return Error::InvalidArgument(option + ": '" + s + "' is not a count");
  }
  return static_cast<uint64_t>(v);
}

// write --synthetic SEED [--subarray LO:HI,...] [--cells N|MIN:MAX]
// [--fragments N] (core/write/synthetic.h).
Status WriteSynthetic(const std::string& array, uint64_t timestamp,
                      std::map<std::string, std::string>& opt) {
  ASSIGN_OR_RETURN(ArraySchema s, LatestSchema(array));
  SyntheticSpec spec;
  ASSIGN_OR_RETURN(spec.seed, ParseCount("--synthetic", opt["--synthetic"]));
  if (opt.count("--subarray")) {
    std::istringstream ss(opt["--subarray"]);
    std::string part;
    size_t d = 0;
    while (std::getline(ss, part, ',')) {
      const size_t colon = part.find(':', 1);
      if (colon == std::string::npos || d >= s.dimensions.size()) {
        return Error::InvalidArgument("--subarray: '" + part + "' is not LO:HI of a dimension");
      }
      const Dimension& dim = s.dimensions[d++];
      Range r;
      auto lo = ParseValue(dim.type, part.substr(0, colon));
      auto hi = ParseValue(dim.type, part.substr(colon + 1));
      if (!lo.ok() || !hi.ok()) {
        return Error::InvalidArgument("--subarray: '" + part +
                                      "': " + (lo.ok() ? hi : lo).error().message());
      }
      spec.subarray.push_back(Range{*lo, *hi});
    }
    if (spec.subarray.size() != s.dimensions.size()) {
      return Error::InvalidArgument("--subarray needs one LO:HI per dimension");
    }
  }
  if (opt.count("--cells")) {
    if (s.dense()) return Error::InvalidArgument("--cells is for sparse arrays");
    const std::string& c = opt["--cells"];
    const size_t colon = c.find(':');
    ASSIGN_OR_RETURN(spec.cells_min, ParseCount("--cells", c.substr(0, colon)));
    spec.cells_max = spec.cells_min;
    if (colon != std::string::npos) {
      ASSIGN_OR_RETURN(spec.cells_max, ParseCount("--cells", c.substr(colon + 1)));
    }
    if (spec.cells_min == 0 || spec.cells_min > spec.cells_max) {
      return Error::InvalidArgument("--cells must be positive (N or MIN:MAX)");
    }
  }
  if (opt.count("--fragments")) {
    ASSIGN_OR_RETURN(spec.fragments, ParseCount("--fragments", opt["--fragments"]));
    if (spec.fragments == 0) return Error::InvalidArgument("--fragments must be positive");
  }
  auto names = WriteSyntheticFragments(array, s, timestamp, spec, [](const std::string& name) {
    std::printf("%s\n", name.c_str());
  });
  if (!names.ok()) return names.error();
  return Ok();
}

// ---------------------------------------------------------------- maintenance
// meta, consolidate-metadata, consolidate, vacuum (core/write/metadata_writer.h,
// core/write/consolidation.h). Their arguments are not all "--option value"
// pairs, so they are parsed here.

bool IsMaintenanceCommand(const std::string& cmd) {
  return cmd == "meta" || cmd == "consolidate-metadata" || cmd == "consolidate" || cmd == "vacuum";
}

Result<uint64_t> ParseTimestamp(const std::string& s) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || *end != '\0' || errno == ERANGE) {
    return Error::InvalidArgument("--timestamp: '" + s + "' is not a timestamp (ms)");
  }
  return static_cast<uint64_t>(v);
}

// meta ARRAY [--timestamp T] put KEY TYPE VALUES... | delete KEY
Status RunMeta(const std::string& array, const std::vector<std::string>& args) {
  size_t i = 0;
  uint64_t ts = NowMs();
  if (i < args.size() && args[i] == "--timestamp") {
    if (i + 1 >= args.size()) return Error::InvalidArgument("--timestamp needs a value");
    ASSIGN_OR_RETURN(ts, ParseTimestamp(args[i + 1]));
    i += 2;
  }
  const std::string op = i < args.size() ? args[i++] : "";
  MetadataEntry e;
  if (op == "put") {
    if (args.size() - i < 2) return Error::InvalidArgument("meta put needs KEY TYPE VALUES...");
    e.key = args[i];
    std::vector<std::string> values(args.begin() + static_cast<ptrdiff_t>(i + 2), args.end());
    auto v = MetadataValueFromText(args[i + 1], values);
    if (!v.ok()) return v.error().WithContext("meta put " + e.key);
    e.value = std::move(v).value();
  } else if (op == "delete") {
    if (args.size() - i != 1) return Error::InvalidArgument("meta delete needs exactly one KEY");
    e.key = args[i];
    e.deleted = true;
  } else {
    return Error::InvalidArgument("meta needs 'put KEY TYPE VALUES...' or 'delete KEY'");
  }
  ASSIGN_OR_RETURN(std::string name, WriteArrayMetadata(array, ts, {e}, DefaultLimits()));
  std::printf("__meta/%s\n", name.c_str());
  return Ok();
}

int RunMaintenance(int argc, char** argv) {
  const std::string cmd = argv[1], array = argv[2];
  const std::vector<std::string> args(argv + 3, argv + argc);
  Status st;
  if (cmd == "meta") {
    st = RunMeta(array, args);
  } else if (cmd == "consolidate-metadata") {
    if (!args.empty()) return Usage();
    auto r = ConsolidateFragmentMetadata(array, DefaultLimits());
    if (!r.ok()) {
      st = r.error();
    } else if (r->file.empty()) {
      std::fprintf(stderr, "tiledb-mkarray: fewer than two fragments, nothing consolidated\n");
    } else {
      std::printf("%s\n", r->file.c_str());
    }
  } else if (cmd == "consolidate") {
    ConsolidateOptions options;
    for (const std::string& a : args) {
      if (a != "--without-timestamps") return Usage();
      options.without_timestamps = true;
    }
    auto r = ConsolidateFragments(array, DefaultLimits(), options);
    if (!r.ok()) {
      st = r.error();
    } else if (r->fragment.empty()) {
      std::fprintf(stderr, "tiledb-mkarray: fewer than two fragments, nothing consolidated\n");
    } else {
      std::fprintf(stderr, "tiledb-mkarray: %zu fragments, %llu cells consolidated; %s\n",
                   r->consolidated.size(), static_cast<unsigned long long>(r->cell_count),
                   r->vacuum_file.c_str());
      std::printf("%s\n", r->fragment.c_str());
    }
  } else {  // vacuum
    if (!args.empty()) return Usage();
    auto r = VacuumFragments(array, DefaultLimits());
    if (!r.ok()) {
      st = r.error();
    } else {
      std::printf("removed %zu fragments, %zu vacuum files\n", r->removed_fragments.size(),
                  r->removed_vacuum_files.size());
    }
  }
  if (!st.ok()) {
    std::fprintf(stderr, "tiledb-mkarray: %s\n", st.error().ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  if (IsMaintenanceCommand(argv[1])) return RunMaintenance(argc, argv);
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
      auto schema = SchemaFromJson(*text, DefaultLimits());
      if (!schema.ok()) {
        st = schema.error();
      } else {
        auto name = CreateArray(array, *schema, ts, DefaultLimits());
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
