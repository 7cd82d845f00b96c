#include "core/write/schema_writer.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/write/filter_writer.h"

namespace tiledbfs::core {
namespace {

using Json = nlohmann::json;

void PutDimension(const Dimension& d, ByteWriter& w) {
  w.PutName32(d.name);
  w.Put<uint8_t>(static_cast<uint8_t>(d.type));
  w.Put<uint32_t>(d.cell_val_num);
  SerializeFilterPipeline(d.filters, w);
  if (d.var()) {
    w.Put<uint64_t>(0);
  } else {
    w.Put<uint64_t>(d.domain.lo.size() + d.domain.hi.size());
    w.PutBytes(d.domain.lo);
    w.PutBytes(d.domain.hi);
  }
  w.Put<uint8_t>(d.tile_extent ? 0 : 1);
  if (d.tile_extent) w.PutBytes(*d.tile_extent);
}

void PutAttribute(const Attribute& a, ByteWriter& w) {
  w.PutName32(a.name);
  w.Put<uint8_t>(static_cast<uint8_t>(a.type));
  w.Put<uint32_t>(a.cell_val_num);
  SerializeFilterPipeline(a.filters, w);
  w.Put<uint64_t>(a.fill_value.size());
  w.PutBytes(a.fill_value);
  w.Put<uint8_t>(a.nullable ? 1 : 0);
  w.Put<uint8_t>(a.fill_value_validity);
  w.Put<uint8_t>(a.order);
  w.PutName32(a.enumeration_name.value_or(""));
}

Result<Json> Get(const Json& j, const char* key, std::string_view where) {
  if (!j.is_object() || !j.contains(key)) {
    return Error::InvalidArgument(fmt::format("schema.json: {}: missing key '{}'", where, key));
  }
  return j.at(key);
}

Result<Layout> LayoutFromName(const std::string& s, std::string_view where) {
  if (s == "row-major") return Layout::kRowMajor;
  if (s == "col-major") return Layout::kColMajor;
  if (s == "hilbert") return Layout::kHilbert;
  return Error::InvalidArgument(fmt::format("schema.json: {}: unknown layout '{}'", where, s));
}

Result<FilterType> FilterFromName(const std::string& n) {
  for (uint8_t b = 0; b <= 19; ++b) {
    auto t = static_cast<FilterType>(b);
    if (FilterName(t) == n) return t;
  }
  if (n == "DICTIONARY_ENCODING") return FilterType::kDictionary;
  return Error::InvalidArgument(fmt::format("schema.json: unknown filter '{}'", n));
}

Result<FilterPipeline> PipelineFromJson(const Json& j, std::string_view where) {
  FilterPipeline p;
  p.version = kWriteFormatVersion;
  const Json* list = &j;
  if (j.is_object()) {
    if (j.contains("max_chunk_size")) p.max_chunk_size = j["max_chunk_size"].get<uint32_t>();
    if (!j.contains("filters")) return p;
    list = &j["filters"];
  }
  if (!list->is_array()) {
    return Error::InvalidArgument(fmt::format("schema.json: {}: filters must be a list", where));
  }
  for (const Json& fj : *list) {
    Filter f;
    std::string name = fj.is_string() ? fj.get<std::string>() : fj.value("name", std::string());
    ASSIGN_OR_RETURN_CTX(f.type, FilterFromName(name), std::string(where));
    // TileDB's defaults when options are not given.
    f.compression_level = -1;
    if (f.type == FilterType::kPositiveDelta || f.type == FilterType::kBitWidthReduction) {
      f.max_window_size = 1024;
    }
    if (fj.is_object()) {
      if (fj.contains("level")) f.compression_level = fj["level"].get<int32_t>();
      if (fj.contains("max_window")) f.max_window_size = fj["max_window"].get<uint32_t>();
      if (fj.contains("reinterpret_datatype")) {
        auto t = DatatypeFromName(fj["reinterpret_datatype"].get<std::string>());
        if (t && *t != Datatype::kAny) f.reinterpret_datatype = *t;
      }
      if (fj.contains("byte_width")) f.scale_byte_width = fj["byte_width"].get<uint64_t>();
      if (fj.contains("factor") && fj["factor"].is_number()) f.scale_factor = fj["factor"];
      if (fj.contains("offset") && fj["offset"].is_number()) f.scale_offset = fj["offset"];
    }
    p.filters.push_back(f);
  }
  return p;
}

Result<FilterPipeline> FieldPipeline(const Json& j, std::string_view where) {
  if (j.contains("filter_pipeline")) return PipelineFromJson(j["filter_pipeline"], where);
  if (j.contains("filters")) return PipelineFromJson(j["filters"], where);
  FilterPipeline p;
  p.version = kWriteFormatVersion;
  return p;
}

bool SamePipeline(const FilterPipeline& a, const FilterPipeline& b) {
  if (a.max_chunk_size != b.max_chunk_size || a.filters.size() != b.filters.size()) return false;
  ByteWriter wa, wb;
  SerializeFilterPipeline(a, wa);
  SerializeFilterPipeline(b, wb);
  return wa.bytes() == wb.bytes();
}

uint8_t HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 0xFF;
}

}  // namespace

Result<ByteVec> EncodeValue(Datatype t, const Json& v, std::string_view where);

// One value of a fixed-size type from JSON (a number, or "nan"/"inf"/"-inf").
Result<ByteVec> EncodeValue(Datatype t, const Json& v, std::string_view where) {
  auto bad = [&]() {
    return Error::InvalidArgument(
        fmt::format("schema.json: {}: bad {} value {}", where, DatatypeName(t), v.dump()));
  };
  ByteVec out(DatatypeSize(t), 0);
  auto put = [&](auto x) { std::memcpy(out.data(), &x, sizeof(x)); };
  if (IsFloat(t)) {
    double d;
    if (v.is_number()) {
      d = v.get<double>();
    } else if (v.is_string()) {
      std::string s = v.get<std::string>();
      if (s == "nan")
        d = std::numeric_limits<double>::quiet_NaN();
      else if (s == "inf")
        d = INFINITY;
      else if (s == "-inf")
        d = -INFINITY;
      else
        return bad();
    } else {
      return bad();
    }
    if (t == Datatype::kFloat32)
      put(static_cast<float>(d));
    else
      put(d);
    return out;
  }
  if (!v.is_number_integer()) return bad();
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    std::memcpy(out.data(), &u, out.size());
  } else {
    int64_t i = v.get<int64_t>();
    std::memcpy(out.data(), &i, out.size());
  }
  return out;
}

Result<ByteVec> SerializeArraySchema(const ArraySchema& s, const Limits& limits) {
  if (!s.labels.empty() || !s.enumerations.empty()) {
    return Error::Unsupported("schemas with dimension labels or enumerations cannot be written");
  }
  if (!s.current_domain.empty) {
    return Error::Unsupported("a non-empty current domain cannot be written yet");
  }
  if (s.dense()) {
    for (const Dimension& d : s.dimensions) {
      if (d.type != s.dimensions[0].type) {
        return Error::InvalidArgument("dense arrays need all dimensions of one type");
      }
      if (IsFloat(d.type) || d.var()) {
        return Error::InvalidArgument("dense arrays need integer dimensions");
      }
    }
  }
  ByteWriter w;
  w.Put<uint32_t>(kWriteFormatVersion);
  w.Put<uint8_t>(s.allows_dups ? 1 : 0);
  w.Put<uint8_t>(static_cast<uint8_t>(s.array_type));
  w.Put<uint8_t>(static_cast<uint8_t>(s.tile_order));
  w.Put<uint8_t>(static_cast<uint8_t>(s.cell_order));
  w.Put<uint64_t>(s.capacity);
  SerializeFilterPipeline(s.coords_filters, w);
  SerializeFilterPipeline(s.offsets_filters, w);
  SerializeFilterPipeline(s.validity_filters, w);
  w.Put<uint32_t>(static_cast<uint32_t>(s.dimensions.size()));
  for (const Dimension& d : s.dimensions) PutDimension(d, w);
  w.Put<uint32_t>(static_cast<uint32_t>(s.attributes.size()));
  for (const Attribute& a : s.attributes) PutAttribute(a, w);
  w.Put<uint32_t>(0);  // dimension labels
  w.Put<uint32_t>(0);  // enumerations
  w.Put<uint32_t>(0);  // current domain version
  w.Put<uint8_t>(1);   // current domain empty
  // Round trip through our own parser: never write what we cannot read.
  ASSIGN_OR_RETURN_CTX(ArraySchema back, ParseArraySchema(w.bytes(), 0, limits),
                       "serialized schema");
  return w.Take();
}

Result<ArraySchema> SchemaFromJson(std::string_view text, const Limits& limits) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Error::InvalidArgument("schema.json: not a JSON object");
  }
  try {
    ArraySchema s;
    s.version = kWriteFormatVersion;
    ASSIGN_OR_RETURN(Json type, Get(j, "array_type", "schema"));
    if (type == "dense")
      s.array_type = ArrayType::kDense;
    else if (type == "sparse")
      s.array_type = ArrayType::kSparse;
    else
      return Error::InvalidArgument("schema.json: array_type must be dense or sparse");
    ASSIGN_OR_RETURN(s.tile_order,
                     LayoutFromName(j.value("tile_order", "row-major"), "tile_order"));
    ASSIGN_OR_RETURN(s.cell_order,
                     LayoutFromName(j.value("cell_order", "row-major"), "cell_order"));
    s.capacity = j.value("capacity", uint64_t{10000});
    s.allows_dups = j.value("allows_dups", false);
    auto pipeline = [&](const char* key, FilterType dflt) -> Result<FilterPipeline> {
      if (j.contains(key)) return PipelineFromJson(j[key], key);
      FilterPipeline p;
      p.version = kWriteFormatVersion;
      Filter f;
      f.type = dflt;
      f.compression_level = -1;
      p.filters.push_back(f);
      return p;
    };
    ASSIGN_OR_RETURN(s.coords_filters, pipeline("coords_filters", FilterType::kZstd));
    ASSIGN_OR_RETURN(s.offsets_filters, pipeline("offsets_filters", FilterType::kZstd));
    ASSIGN_OR_RETURN(s.validity_filters, pipeline("validity_filters", FilterType::kRle));

    ASSIGN_OR_RETURN(Json dims, Get(j, "dims", "schema"));
    for (const Json& dj : dims) {
      Dimension d;
      ASSIGN_OR_RETURN(Json name, Get(dj, "name", "dims"));
      d.name = name.get<std::string>();
      std::string where = "dimension '" + d.name + "'";
      ASSIGN_OR_RETURN(Json tname, Get(dj, "type", where));
      auto t = DatatypeFromName(tname.get<std::string>());
      if (!t) return Error::InvalidArgument(fmt::format("schema.json: {}: unknown type", where));
      d.type = *t;
      d.cell_val_num = d.type == Datatype::kStringAscii ? kVarNum : 1;
      ASSIGN_OR_RETURN(d.filters, FieldPipeline(dj, where));
      if (SamePipeline(d.filters, s.coords_filters)) d.filters.filters.clear();
      if (d.filters.filters.empty()) d.filters.max_chunk_size = 65536;
      if (!d.var()) {
        ASSIGN_OR_RETURN(Json dom, Get(dj, "domain", where));
        if (!dom.is_array() || dom.size() != 2) {
          return Error::InvalidArgument(
              fmt::format("schema.json: {}: domain must be [lo, hi]", where));
        }
        ASSIGN_OR_RETURN(d.domain.lo, EncodeValue(d.type, dom[0], where + " domain"));
        ASSIGN_OR_RETURN(d.domain.hi, EncodeValue(d.type, dom[1], where + " domain"));
        if (dj.contains("tile_extent") && !dj["tile_extent"].is_null()) {
          ASSIGN_OR_RETURN(ByteVec ext, EncodeValue(d.type, dj["tile_extent"], where));
          d.tile_extent = ext;
        }
      }
      s.dimensions.push_back(std::move(d));
    }
    ASSIGN_OR_RETURN(Json attrs, Get(j, "attrs", "schema"));
    for (const Json& aj : attrs) {
      Attribute a;
      ASSIGN_OR_RETURN(Json name, Get(aj, "name", "attrs"));
      a.name = name.get<std::string>();
      std::string where = "attribute '" + a.name + "'";
      ASSIGN_OR_RETURN(Json tname, Get(aj, "type", where));
      auto t = DatatypeFromName(tname.get<std::string>());
      if (!t) return Error::InvalidArgument(fmt::format("schema.json: {}: unknown type", where));
      a.type = *t;
      bool var = aj.value("var", false);
      a.cell_val_num = var ? kVarNum : aj.value("cell_val_num", uint32_t{1});
      if (a.cell_val_num == 0) {
        return Error::InvalidArgument(fmt::format("schema.json: {}: cell_val_num 0", where));
      }
      a.nullable = aj.value("nullable", false);
      a.fill_value_validity = aj.value("fill_validity", uint8_t{0});
      ASSIGN_OR_RETURN(a.filters, FieldPipeline(aj, where));
      a.fill_value = DefaultFillValue(a.type, a.cell_val_num);
      if (aj.contains("fill_value_hex")) {
        std::string hex = aj["fill_value_hex"].get<std::string>();
        ByteVec fill;
        for (size_t i = 0; i + 1 < hex.size(); i += 2) {
          uint8_t hi = HexDigit(hex[i]), lo = HexDigit(hex[i + 1]);
          if (hi > 15 || lo > 15) {
            return Error::InvalidArgument(
                fmt::format("schema.json: {}: bad fill_value_hex", where));
          }
          fill.push_back(static_cast<uint8_t>(hi << 4 | lo));
        }
        a.fill_value = fill;
      } else if (aj.contains("fill_value") && !IsString(a.type) && a.cell_val_num == 1) {
        ASSIGN_OR_RETURN(a.fill_value, EncodeValue(a.type, aj["fill_value"], where + " fill"));
      }
      if (aj.contains("order")) {
        std::string o = aj["order"].get<std::string>();
        a.order = o == "increasing" ? 1 : o == "decreasing" ? 2 : 0;
      }
      s.attributes.push_back(std::move(a));
    }
    // Validate through the serializer + parser pair.
    ASSIGN_OR_RETURN(ByteVec payload, SerializeArraySchema(s, limits));
    ASSIGN_OR_RETURN_CTX(ArraySchema parsed, ParseArraySchema(payload, 0, limits), "schema.json");
    return parsed;
  } catch (const Json::exception& e) {
    return Error::InvalidArgument(std::string("schema.json: ") + e.what());
  }
}

}  // namespace tiledbfs::core
