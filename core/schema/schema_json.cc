// SchemaToJson / SchemaToText. Values follow the corpus' expected
// schema.json: numbers as JSON numbers of their type (NaN and infinities as
// the strings "nan", "inf", "-inf"), CHAR/ASCII/UTF-8 values as strings
// (a byte not part of valid UTF-8 as \xHH, core/util/text.h), BLOB-like
// values as hex, a
// fixed single-value cell as a scalar and any other cell as a list.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "core/format/number.h"
#include "core/schema/array_schema.h"
#include "core/util/text.h"

namespace tiledbfs::core {
namespace {

using Json = nlohmann::ordered_json;

std::string Hex(Bytes b) {
  std::string out;
  AppendHex(out, b);
  return out;
}

// Text of a string value: UTF-8 as is, a byte not part of it as \xHH;
// UTF-16/32 and UCS-2/4 decoded by code unit.
std::string StringText(Datatype t, Bytes b) {
  std::string out;
  uint64_t unit = DatatypeSize(t);
  if (unit == 1) {
    AppendUtf8Escaped(out, b);
    return out;
  }
  for (uint64_t i = 0; i + unit <= b.size(); i += unit) {
    uint32_t cu = 0;
    std::memcpy(&cu, b.data() + i, unit);
    if (unit == 2 && cu >= 0xD800 && cu < 0xDC00 && i + 4 <= b.size()) {
      uint16_t lo;
      std::memcpy(&lo, b.data() + i + 2, 2);
      if (lo >= 0xDC00 && lo < 0xE000) {
        cu = 0x10000 + ((cu - 0xD800) << 10) + (lo - 0xDC00);
        i += 2;
      }
    }
    AppendUtf8(out, cu);
  }
  return out;
}

Json FloatJson(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

// One value of a numeric type (integers, floats, BOOL, datetimes, times).
Json NumberJson(Datatype t, const uint8_t* p) {
  return VisitNumber(t, [&](auto zero) -> Json {
    using T = decltype(zero);
    const T v = LoadNumber<T>(Bytes(p, sizeof(T)));
    if constexpr (std::is_floating_point_v<T>) {
      return FloatJson(v);
    } else {
      return v;
    }
  });
}

bool IsTextType(Datatype t) { return IsString(t); }
bool IsHexType(Datatype t) { return IsBlobLike(t) || t == Datatype::kAny; }

// A cell's value: scalar when `scalar` (fixed, one value), else a list.
Json CellJson(Datatype t, Bytes b, bool scalar) {
  if (IsTextType(t)) return StringText(t, b);
  if (IsHexType(t)) return Hex(b);
  uint64_t size = DatatypeSize(t);
  if (scalar && b.size() == size) return NumberJson(t, b.data());
  Json list = Json::array();
  for (uint64_t i = 0; i + size <= b.size(); i += size) list.push_back(NumberJson(t, b.data() + i));
  return list;
}

Json RangeJson(Datatype t, const Range& r) {
  return Json::array({CellJson(t, r.lo, true), CellJson(t, r.hi, true)});
}

// TileDB's filter names (its C API strings without the prefix).
std::string JsonFilterName(FilterType t) {
  if (t == FilterType::kDictionary) return "DICTIONARY_ENCODING";
  return std::string(FilterName(t));
}

Json FilterJson(const Filter& f) {
  Json j;
  j["name"] = JsonFilterName(f.type);
  switch (FilterOptionsOf(f.type)) {
    case FilterOptions::kCompressor:
      j["level"] = f.compression_level;
      break;
    case FilterOptions::kDelta:
      j["level"] = f.compression_level;
      j["reinterpret_datatype"] =
          std::string(DatatypeName(f.reinterpret_datatype.value_or(Datatype::kAny)));
      break;
    case FilterOptions::kWindow:
      j["max_window"] = f.max_window_size;
      break;
    case FilterOptions::kScaleFloat:
      j["byte_width"] = f.scale_byte_width;
      j["factor"] = FloatJson(f.scale_factor);
      j["offset"] = FloatJson(f.scale_offset);
      break;
    case FilterOptions::kRaw:
      j["options_hex"] = Hex(f.raw_options);
      break;
    case FilterOptions::kNone:
      break;
  }
  return j;
}

Json PipelineJson(const FilterPipeline& p) {
  Json filters = Json::array();
  for (const Filter& f : p.filters) filters.push_back(FilterJson(f));
  return Json{{"max_chunk_size", p.max_chunk_size}, {"filters", std::move(filters)}};
}

Json FilterNames(const FilterPipeline& p) {
  Json names = Json::array();
  for (const Filter& f : p.filters) names.push_back(JsonFilterName(f.type));
  return names;
}

// TileDB gives a dimension of format >= 5 without filters the coords
// filters; older dimensions keep an empty pipeline.
const FilterPipeline& ShownDimensionFilters(const ArraySchema& s, size_t d) {
  if (s.version < 5) return s.dimensions[d].filters;
  return s.dim_filters(d);
}

const Enumeration* FindValues(const std::vector<Enumeration>* enums, const std::string& name) {
  if (enums == nullptr) return nullptr;
  for (const Enumeration& e : *enums) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

// Enumerations used by attributes first (in attribute order), then the rest.
std::vector<const EnumerationRef*> EnumerationOrder(const ArraySchema& s) {
  std::vector<const EnumerationRef*> order;
  auto add = [&](const EnumerationRef* e) {
    if (e == nullptr) return;
    for (const EnumerationRef* o : order) {
      if (o == e) return;
    }
    order.push_back(e);
  };
  for (const Attribute& a : s.attributes) {
    if (a.enumeration_name) add(s.FindEnumeration(*a.enumeration_name));
  }
  for (const EnumerationRef& e : s.enumerations) add(&e);
  return order;
}

Json EnumerationJson(const EnumerationRef& ref, const Enumeration* e) {
  Json j;
  j["name"] = ref.name;
  if (e == nullptr) {
    j["path_name"] = ref.path_name;
    return j;
  }
  j["type"] = std::string(DatatypeName(e->type));
  j["cell_val_num"] = e->cell_val_num;
  j["var"] = e->cell_val_num == kVarNum;
  j["ordered"] = e->ordered;
  Json values = Json::array();
  for (uint64_t i = 0; i < e->size(); ++i) {
    values.push_back(CellJson(e->type, e->value(i), e->cell_val_num == 1));
  }
  j["values"] = std::move(values);
  return j;
}

Json SchemaJson(const ArraySchema& s, const std::vector<Enumeration>* enums) {
  Json j;
  j["array_type"] = s.dense() ? "dense" : "sparse";
  j["tile_order"] = std::string(LayoutName(s.tile_order));
  j["cell_order"] = std::string(LayoutName(s.cell_order));
  j["capacity"] = s.capacity;
  j["allows_dups"] = s.allows_dups;
  j["version"] = s.version;
  j["timestamp_range"] = Json::array({s.timestamp_start, s.timestamp_end});

  Json dims = Json::array();
  for (size_t i = 0; i < s.dimensions.size(); ++i) {
    const Dimension& d = s.dimensions[i];
    Json dj;
    dj["name"] = d.name;
    dj["type"] = std::string(DatatypeName(d.type));
    dj["cell_val_num"] = d.cell_val_num;
    dj["var"] = d.var();
    dj["domain"] = d.var() ? Json(nullptr) : RangeJson(d.type, d.domain);
    dj["tile_extent"] = d.tile_extent ? CellJson(d.type, *d.tile_extent, true) : Json(nullptr);
    dj["filters"] = FilterNames(ShownDimensionFilters(s, i));
    dj["filter_pipeline"] = PipelineJson(ShownDimensionFilters(s, i));
    dims.push_back(std::move(dj));
  }
  j["dims"] = std::move(dims);

  Json attrs = Json::array();
  for (const Attribute& a : s.attributes) {
    Json aj;
    aj["name"] = a.name;
    aj["type"] = std::string(DatatypeName(a.type));
    aj["cell_val_num"] = a.cell_val_num;
    aj["var"] = a.var();
    aj["nullable"] = a.nullable;
    aj["fill_value"] = CellJson(a.type, a.fill_value, !a.var() && a.cell_val_num == 1);
    aj["fill_value_hex"] = Hex(a.fill_value);
    if (a.nullable) aj["fill_validity"] = a.fill_value_validity;
    aj["filters"] = FilterNames(a.filters);
    aj["filter_pipeline"] = PipelineJson(a.filters);
    if (a.order != 0) aj["order"] = a.order == 1 ? "increasing" : "decreasing";
    if (a.enumeration_name) aj["enumeration"] = *a.enumeration_name;
    attrs.push_back(std::move(aj));
  }
  j["attrs"] = std::move(attrs);

  if (!s.enumerations.empty()) {
    Json list = Json::array();
    for (const EnumerationRef* ref : EnumerationOrder(s)) {
      list.push_back(EnumerationJson(*ref, FindValues(enums, ref->name)));
    }
    j["enumerations"] = std::move(list);
  }

  if (!s.labels.empty()) {
    Json labels = Json::array();
    for (const DimensionLabel& l : s.labels) {
      Json lj;
      lj["name"] = l.name;
      lj["dimension"] = l.dimension_index < s.dimensions.size()
                            ? Json(s.dimensions[l.dimension_index].name)
                            : Json(l.dimension_index);
      lj["label_order"] = l.label_order == 1   ? "increasing"
                          : l.label_order == 2 ? "decreasing"
                                               : "unordered";
      lj["type"] = std::string(DatatypeName(l.type));
      lj["cell_val_num"] = l.cell_val_num;
      lj["var"] = l.cell_val_num == kVarNum;
      lj["uri"] = l.uri;
      lj["relative_uri"] = l.relative_uri;
      lj["attribute_name"] = l.attribute_name;
      lj["is_external"] = l.is_external;
      labels.push_back(std::move(lj));
    }
    j["dimension_labels"] = std::move(labels);
  }

  j["coords_filters"] = PipelineJson(s.coords_filters);
  j["offsets_filters"] = PipelineJson(s.offsets_filters);
  j["validity_filters"] = PipelineJson(s.validity_filters);

  if (!s.current_domain.empty) {
    Json ranges = Json::array();
    for (size_t d = 0; d < s.current_domain.ranges.size() && d < s.dimensions.size(); ++d) {
      ranges.push_back(RangeJson(s.dimensions[d].type, s.current_domain.ranges[d]));
    }
    j["current_domain"] = Json{{"type", "NDRECTANGLE"}, {"ranges", std::move(ranges)}};
  }
  return j;
}

// Compact one-line text of a JSON value ("[1, 100]", "\"none\"", "nan").
// Strings are quoted only when `quote` (values of string types).
std::string Compact(const Json& j, bool quote = true) {
  if (j.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < j.size(); ++i) {
      if (i > 0) out += ", ";
      out += Compact(j[i], quote);
    }
    return out + "]";
  }
  if (j.is_string() && !quote) return j.get<std::string>();
  return DumpJsonText(j, -1);
}

// A value of type t for people: strings quoted (as hex when they hold
// control characters or are not UTF-8), numbers (nan too) bare.
std::string ValueText(Datatype t, Bytes b, bool scalar) {
  if (IsTextType(t) && DatatypeSize(t) == 1) {
    bool plain = ValidUtf8(b);
    for (uint8_t c : b) plain = plain && c >= 0x20 && c != 0x7f;
    if (!plain) return "0x" + Hex(b);
  }
  if (IsHexType(t)) return "0x" + Hex(b);
  return Compact(CellJson(t, b, scalar), IsTextType(t));
}

std::string PipelineText(const FilterPipeline& p) {
  if (p.filters.empty()) return "none";
  std::string out;
  for (const Filter& f : p.filters) {
    if (!out.empty()) out += ", ";
    Json j = FilterJson(f);
    out += j["name"].get<std::string>();
    std::string opts;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "name") continue;
      if (!opts.empty()) opts += ' ';
      opts += it.key() + "=" + Compact(it.value(), false);
    }
    if (!opts.empty()) out += "(" + opts + ")";
  }
  return out + fmt::format(" [chunks of {} bytes]", p.max_chunk_size);
}

std::string CellValNumText(uint32_t n) { return n == kVarNum ? "var" : std::to_string(n); }

}  // namespace

std::string SchemaToJson(const ArraySchema& schema, const std::vector<Enumeration>* enums) {
  return DumpJsonText(SchemaJson(schema, enums), 2);
}

std::string SchemaToText(const ArraySchema& s, const std::vector<Enumeration>* enums) {
  std::string out;
  out += fmt::format("{} array, format version {}\n", s.dense() ? "Dense" : "Sparse", s.version);
  if (!s.name.empty()) {
    out += fmt::format("schema file: {} (timestamps {} to {})\n", s.name, s.timestamp_start,
                       s.timestamp_end);
  }
  out += fmt::format("tile order: {}, cell order: {}\n", LayoutName(s.tile_order),
                     LayoutName(s.cell_order));
  if (!s.dense()) {
    out += fmt::format("capacity: {} cells per data tile, duplicates {}\n", s.capacity,
                       s.allows_dups ? "allowed" : "not allowed");
  }
  out += fmt::format("\ndimensions ({}):\n", s.dimensions.size());
  for (size_t i = 0; i < s.dimensions.size(); ++i) {
    const Dimension& d = s.dimensions[i];
    out += fmt::format("  {}: {}", d.name, DatatypeName(d.type));
    if (d.var()) out += " (var-sized)";
    if (!d.var()) {
      out += fmt::format(", domain [{}, {}]", ValueText(d.type, d.domain.lo, true),
                         ValueText(d.type, d.domain.hi, true));
    }
    if (d.tile_extent) {
      out += fmt::format(", tile extent {}", ValueText(d.type, *d.tile_extent, true));
    }
    out += fmt::format(", filters: {}\n", PipelineText(ShownDimensionFilters(s, i)));
  }
  if (!s.current_domain.empty) {
    out += "current domain:";
    for (size_t d = 0; d < s.current_domain.ranges.size() && d < s.dimensions.size(); ++d) {
      const Range& r = s.current_domain.ranges[d];
      Datatype t = s.dimensions[d].type;
      out += fmt::format(" {} [{}, {}]", s.dimensions[d].name, ValueText(t, r.lo, true),
                         ValueText(t, r.hi, true));
    }
    out += "\n";
  }
  out += fmt::format("\nattributes ({}):\n", s.attributes.size());
  for (const Attribute& a : s.attributes) {
    out += fmt::format("  {}: {}", a.name, DatatypeName(a.type));
    if (a.var()) out += ", var-sized";
    if (!a.var() && a.cell_val_num != 1) out += fmt::format(" x {}", a.cell_val_num);
    if (a.nullable) out += ", nullable";
    out +=
        fmt::format(", fill {}", ValueText(a.type, a.fill_value, !a.var() && a.cell_val_num == 1));
    if (a.nullable) out += fmt::format(" (validity {})", a.fill_value_validity);
    if (a.order != 0) out += a.order == 1 ? ", increasing" : ", decreasing";
    if (a.enumeration_name) out += fmt::format(", enumeration {}", *a.enumeration_name);
    out += fmt::format(", filters: {}\n", PipelineText(a.filters));
  }
  if (!s.enumerations.empty()) {
    out += fmt::format("\nenumerations ({}):\n", s.enumerations.size());
    for (const EnumerationRef* ref : EnumerationOrder(s)) {
      const Enumeration* e = FindValues(enums, ref->name);
      if (e == nullptr) {
        out += fmt::format("  {}: file {}\n", ref->name, ref->path_name);
        continue;
      }
      out += fmt::format("  {}: {}{}{}, {} values:", ref->name, DatatypeName(e->type),
                         e->cell_val_num == kVarNum ? ", var-sized"
                         : e->cell_val_num == 1     ? ""
                                                    : " x " + CellValNumText(e->cell_val_num),
                         e->ordered ? ", ordered" : "", e->size());
      for (uint64_t i = 0; i < e->size(); ++i) {
        out += fmt::format(" {}", ValueText(e->type, e->value(i), e->cell_val_num == 1));
      }
      out += "\n";
    }
  }
  if (!s.labels.empty()) {
    out += fmt::format("\ndimension labels ({}):\n", s.labels.size());
    for (const DimensionLabel& l : s.labels) {
      out += fmt::format("  {} on dimension {}: {} x {}, {}, stored in {}{}\n", l.name,
                         l.dimension_index, DatatypeName(l.type), CellValNumText(l.cell_val_num),
                         l.label_order == 1   ? "increasing"
                         : l.label_order == 2 ? "decreasing"
                                              : "unordered",
                         l.uri, l.is_external ? " (external)" : "");
    }
  }
  out += "\n";
  out += fmt::format("coords filters: {}\n", PipelineText(s.coords_filters));
  out += fmt::format("offsets filters: {}\n", PipelineText(s.offsets_filters));
  out += fmt::format("validity filters: {}\n", PipelineText(s.validity_filters));
  return Utf8Escaped(std::move(out));  // names as they are, but for bytes not UTF-8
}

}  // namespace tiledbfs::core
