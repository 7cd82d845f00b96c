#include "fusefs/model/documents.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <type_traits>

#include "core/format/number.h"
#include "core/metadata/query_condition.h"
#include "core/tile/generic_tile.h"
#include "core/util/text.h"
#include "fusefs/model/instant.h"
#include "fusefs/render/csv.h"
#include "fusefs/render/value_text.h"

namespace tiledbfs::fusefs {

using Json = nlohmann::ordered_json;

namespace {

Json FloatJson(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

std::string Text(core::Datatype t, core::Bytes b) {
  std::string out;
  AppendValueText(out, t, b);
  return out;
}

}  // namespace

Json ValueJson(core::Datatype type, core::Bytes v) {
  if (type == core::Datatype::kBool) return core::LoadNumber<uint8_t>(v) != 0;
  // Datetimes are text (ISO 8601), as strings and the rest.
  if (!core::IsNumber(type) || core::IsDatetime(type)) return Text(type, v);
  return core::VisitNumber(type, [&](auto t) -> Json {
    using T = decltype(t);
    if constexpr (std::is_floating_point_v<T>) {
      return FloatJson(core::LoadNumber<T>(v));
    } else {
      return core::LoadNumber<T>(v);
    }
  });
}

std::string MetadataValueText(const core::MetadataValue& v) {
  std::string out;
  if (core::IsString(v.type)) {
    core::AppendUtf8Escaped(out, core::Bytes(v.value.data(), v.value.size()));
    return out;
  }
  uint64_t size = core::DatatypeSize(v.type);
  if (core::IsBlobLike(v.type)) {
    AppendCellBytesText(out, v.type, false, core::Bytes(v.value.data(), v.value.size()));
    return out;
  }
  for (uint32_t i = 0; i < v.num && (i + 1) * size <= v.value.size(); ++i) {
    if (i > 0) out.push_back(' ');
    AppendValueText(out, v.type, core::Bytes(v.value.data() + i * size, size));
  }
  return out;
}

Json MetadataJson(const std::map<std::string, core::MetadataValue>& md) {
  Json out = Json::object();
  for (const auto& [key, v] : md) {
    Json e;
    e["type"] = std::string(core::DatatypeName(v.type));
    e["num"] = v.num;
    uint64_t size = core::DatatypeSize(v.type);
    if (core::IsString(v.type) || core::IsBlobLike(v.type)) {
      e["value"] = ValueJson(v.type, core::Bytes(v.value.data(), v.value.size()));
    } else {
      Json vals = Json::array();
      for (uint32_t i = 0; i < v.num && (i + 1) * size <= v.value.size(); ++i) {
        vals.push_back(ValueJson(v.type, core::Bytes(v.value.data() + i * size, size)));
      }
      e["value"] = vals;
    }
    out[key] = e;
  }
  return out;
}

Result<Json> FragmentJson(const core::Array& array, const core::FragmentMetadata& f) {
  const core::FragmentFooter& ft = f.footer();
  const core::ArraySchema& s = f.schema();
  Json j;
  j["name"] = f.name().name;
  j["uuid"] = f.name().uuid;
  j["timestamp_range"] = {f.name().t1, f.name().t2};
  j["timestamp_range_iso"] = {FormatIso(static_cast<int64_t>(f.name().t1)),
                              FormatIso(static_cast<int64_t>(f.name().t2))};
  j["format_version"] = f.version();
  j["dense"] = ft.dense;
  Json ned = Json::array();
  if (!ft.null_non_empty_domain) {
    for (size_t d = 0; d < ft.non_empty_domain.size() && d < s.dimensions.size(); ++d) {
      const core::Range& r = ft.non_empty_domain[d];
      core::Datatype t = s.dimensions[d].type;
      ned.push_back({ValueJson(t, r.lo), ValueJson(t, r.hi)});
    }
  }
  j["non_empty_domain"] = ned;
  j["cell_count"] = f.cell_num();
  j["tile_count"] = f.tile_num();
  j["has_timestamps"] = ft.has_timestamps;
  j["has_delete_meta"] = ft.has_delete_meta;
  j["schema_name"] = ft.array_schema_name.empty() ? s.name : ft.array_schema_name;
  uint64_t total = 0;
  Json files = Json::object();
  auto add = [&](const std::string& path, uint64_t size) {
    if (path.empty()) return;
    std::string base = path.substr(path.rfind('/') + 1);
    files[base] = size;
    total += size;
  };
  auto field = [&](core::FieldRef r) {
    int idx = f.FieldIndex(r);
    if (idx < 0) return;
    if (static_cast<size_t>(idx) < ft.file_sizes.size()) add(f.DataFile(r), ft.file_sizes[idx]);
    if (static_cast<size_t>(idx) < ft.file_var_sizes.size() && ft.file_var_sizes[idx] > 0) {
      add(f.VarFile(r), ft.file_var_sizes[idx]);
    }
    if (static_cast<size_t>(idx) < ft.file_validity_sizes.size() &&
        ft.file_validity_sizes[idx] > 0) {
      add(f.ValidityFile(r), ft.file_validity_sizes[idx]);
    }
  };
  for (uint32_t a = 0; a < s.attributes.size(); ++a) field(core::FieldRef::Attribute(a));
  for (uint32_t d = 0; d < s.dimensions.size(); ++d) field(core::FieldRef::Dimension(d));
  if (ft.has_timestamps) field(core::FieldRef::Timestamps());
  if (ft.has_delete_meta) {
    field(core::FieldRef::DeleteTimestamps());
    field(core::FieldRef::DeleteConditionIndex());
  }
  auto md_size = array.storage().Size(core::JoinPath(f.dir(), "__fragment_metadata.tdb"));
  if (md_size.ok()) {
    files["__fragment_metadata.tdb"] = *md_size;
    total += *md_size;
  }
  j["files"] = files;
  j["fragment_size"] = total;
  // How it was committed, and what replaces it.
  for (const auto& e : array.listing().fragments) {
    if (e.dir != f.dir()) continue;
    j["commit"] = {{"kind", e.commit == core::CommitKind::kOk             ? "ok"
                            : e.commit == core::CommitKind::kWrt          ? "wrt"
                            : e.commit == core::CommitKind::kConsolidated ? "con"
                                                                          : "implicit"},
                   {"file", e.commit_file}};
  }
  Json replaced = nullptr;
  for (const auto& v : array.listing().fragment_vacuums) {
    for (const auto& entry : v.entries) {
      if (entry == f.dir()) replaced = v.name.name;
    }
  }
  j["replaced_by"] = replaced;
  return j;
}

std::string FragmentText(const Json& j) {
  std::string out;
  for (const auto& [k, v] : j.items()) {
    out += k + ": " + (v.is_string() ? v.get<std::string>() : core::DumpJsonText(v, -1)) + "\n";
  }
  return core::Utf8Escaped(std::move(out));
}

Result<std::string> RenderTilesCsv(const core::FragmentMetadata& f) {
  const core::ArraySchema& s = f.schema();
  struct Field {
    std::string name;
    core::FieldRef ref;
    core::Datatype type;
    bool var, nullable;
  };
  std::vector<Field> fields;
  if (!f.dense() && f.FieldIndex(core::FieldRef::Dimension(0)) < 0 &&
      f.FieldIndex(core::FieldRef::Coords()) >= 0) {
    // Format < 5: every dimension zipped in one __coords.tdb.
    fields.push_back({"__coords", core::FieldRef::Coords(),
                      s.dimensions.empty() ? core::Datatype::kUInt8 : s.dimensions[0].type, false,
                      false});
  } else if (!f.dense()) {
    for (uint32_t d = 0; d < s.dimensions.size(); ++d) {
      fields.push_back({s.dimensions[d].name, core::FieldRef::Dimension(d), s.dimensions[d].type,
                        s.dimensions[d].var(), false});
    }
  }
  for (uint32_t a = 0; a < s.attributes.size(); ++a) {
    fields.push_back({s.attributes[a].name, core::FieldRef::Attribute(a), s.attributes[a].type,
                      s.attributes[a].var(), s.attributes[a].nullable});
  }
  std::string out = "tile,cell_count";
  for (const auto& fl : fields) {
    out += "," + fl.name + ".offset," + fl.name + ".size";
    if (fl.var) out += "," + fl.name + ".var_offset," + fl.name + ".var_size";
    if (fl.nullable) out += "," + fl.name + ".validity_offset," + fl.name + ".validity_size";
  }
  bool mbrs = !f.dense();
  if (mbrs) {
    for (const auto& d : s.dimensions) out += "," + d.name + ".mbr_min," + d.name + ".mbr_max";
  }
  bool stats = f.version() >= 11;
  if (stats) {
    for (const auto& fl : fields) {
      out +=
          "," + fl.name + ".min," + fl.name + ".max," + fl.name + ".sum," + fl.name + ".null_count";
    }
  }
  out += "\n";
  const std::vector<std::vector<core::Range>>* mbr = nullptr;
  // A section the fragment's version does not have leaves its columns
  // empty; a section that cannot be read fails the file (never a table
  // with holes where the data was damaged).
  if (mbrs) {
    auto m = f.Mbrs();
    if (m.ok()) {
      mbr = *m;
    } else if (m.error().code() != core::ErrorCode::kUnsupported) {
      return m.error();
    }
  }
  std::vector<const core::TileStats*> st(fields.size(), nullptr);
  if (stats) {
    for (size_t i = 0; i < fields.size(); ++i) {
      auto r = f.Stats(fields[i].ref);
      if (r.ok()) {
        st[i] = *r;
      } else if (r.error().code() != core::ErrorCode::kUnsupported) {
        return r.error();
      }
    }
  }
  for (uint64_t t = 0; t < f.tile_num(); ++t) {
    out += fmt::format("{},{}", t, f.TileCellNum(t));
    for (const auto& fl : fields) {
      ASSIGN_OR_RETURN(auto loc, f.FixedTile(fl.ref, t));
      out += fmt::format(",{},{}", loc.offset, loc.size);
      if (fl.var) {
        ASSIGN_OR_RETURN(auto vl, f.VarTile(fl.ref, t));
        out += fmt::format(",{},{}", vl.offset, vl.size);
      }
      if (fl.nullable) {
        ASSIGN_OR_RETURN(auto vl, f.ValidityTile(fl.ref, t));
        out += fmt::format(",{},{}", vl.offset, vl.size);
      }
    }
    if (mbrs) {
      for (size_t d = 0; d < s.dimensions.size(); ++d) {
        out.push_back(',');
        if (mbr && t < mbr->size() && d < (*mbr)[t].size()) {
          AppendCsvField(out, Text(s.dimensions[d].type, (*mbr)[t][d].lo));
          out.push_back(',');
          AppendCsvField(out, Text(s.dimensions[d].type, (*mbr)[t][d].hi));
        } else {
          out.push_back(',');
        }
      }
    }
    if (stats) {
      for (size_t i = 0; i < fields.size(); ++i) {
        const core::TileStats* ts = st[i];
        out.push_back(',');
        if (ts && t < ts->mins.size() && !ts->mins[t].empty()) {
          AppendCsvField(out, Text(fields[i].type, ts->mins[t]));
        }
        out.push_back(',');
        if (ts && t < ts->maxs.size() && !ts->maxs[t].empty()) {
          AppendCsvField(out, Text(fields[i].type, ts->maxs[t]));
        }
        out.push_back(',');
        if (ts && t < ts->sums.size()) {
          uint64_t raw = ts->sums[t];
          if (core::IsFloat(fields[i].type)) {
            double d;
            std::memcpy(&d, &raw, 8);
            AppendDoubleText(out, d);
          } else if (core::IsSigned(fields[i].type)) {
            out += fmt::format("{}", static_cast<int64_t>(raw));
          } else {
            out += fmt::format("{}", raw);
          }
        }
        out.push_back(',');
        if (ts && t < ts->null_counts.size()) out += fmt::format("{}", ts->null_counts[t]);
      }
    }
    out += "\n";
  }
  return core::Utf8Escaped(std::move(out));  // the names in the header row
}

Result<std::string> RenderLog(const core::Array& array, uint64_t timestamp) {
  struct Event {
    uint64_t t;
    int order;
    std::string text;
  };
  std::vector<Event> events;
  const core::ArrayListing& l = array.listing();
  bool first_schema = true;
  for (const auto& s : l.schemas) {
    if (s.t2 > timestamp) continue;
    events.push_back(
        {s.t2, 0, fmt::format("{} {}", first_schema ? "create" : "schema-change", s.name)});
    first_schema = false;
  }
  for (const auto& f : l.fragments) {
    if (f.name.t2 > timestamp) continue;
    if (f.name.t1 == f.name.t2) {
      events.push_back({f.name.t2, 1, fmt::format("write {}", f.name.name)});
      continue;
    }
    // A consolidated fragment: its vacuum file lists what it replaces; once
    // vacuumed, that file is gone with them (when is not recorded on disk).
    auto vac = std::find_if(l.fragment_vacuums.begin(), l.fragment_vacuums.end(),
                            [&](const core::VacuumFile& v) { return v.name.name == f.name.name; });
    std::string what = vac != l.fragment_vacuums.end()
                           ? fmt::format("replacing {} fragments", vac->entries.size())
                           : "the fragments it replaced were vacuumed";
    events.push_back({f.name.t2, 3,
                      fmt::format("consolidate {} (cells of {} to {}; {})", f.name.name,
                                  FormatIso(static_cast<int64_t>(f.name.t1)),
                                  FormatIso(static_cast<int64_t>(f.name.t2)), what)});
  }
  for (const auto& c : l.conditions) {
    if (c.name.t2 > timestamp) continue;
    std::string text;
    const core::ArraySchema& schema = *array.SchemaAt(c.name.t2);
    auto type_of = [&schema](const std::string& field) -> std::optional<core::Datatype> {
      int d = schema.DimensionIndex(field);
      if (d >= 0) return schema.dimensions[d].type;
      int a = schema.AttributeIndex(field);
      if (a >= 0) return schema.attributes[a].type;
      return std::nullopt;
    };
    if (!c.is_update) {
      auto cond =
          c.in_consolidated_file
              ? core::DecodeDeleteCondition(c.contents, c.path, 0, array.key(), array.limits())
              : core::LoadDeleteCondition(array.storage(), c.path, array.key(), array.limits());
      if (!cond.ok()) return cond.error().WithContext(c.path);
      text = core::ConditionToText(*cond, type_of);
      events.push_back({c.name.t2, 2, "delete where " + text});
    } else {
      auto upd = c.in_consolidated_file
                     ? core::DecodeUpdateCommit(c.contents, c.path, 0, array.key(), array.limits())
                     : core::LoadUpdateCommit(array.storage(), c.path, array.key(), array.limits());
      if (!upd.ok()) return upd.error().WithContext(c.path);
      text = core::ConditionToText(upd->condition, type_of);
      events.push_back({c.name.t2, 2, "update where " + text});
    }
  }
  for (const auto& m : l.metadata_files) {
    if (m.t2 > timestamp) continue;
    std::string path = "__meta/" + m.name + m.extension;
    std::string what = "metadata";
    ASSIGN_OR_RETURN_CTX(
        auto tile, core::ReadGenericTile(array.storage(), path, 0, array.key(), array.limits()),
        path);
    ASSIGN_OR_RETURN_CTX(auto entries, core::ParseMetadataFile(tile.data, 0), path);
    std::vector<std::string> put, del;
    for (const auto& e : entries) (e.deleted ? del : put).push_back(e.key);
    if (!put.empty()) what += fmt::format(" put {}", fmt::join(put, ","));
    if (!del.empty()) what += fmt::format(" delete {}", fmt::join(del, ","));
    events.push_back({m.t2, 4, what});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.t != b.t ? a.t < b.t : a.order < b.order;
  });
  std::string out;
  for (const auto& e : events) {
    out += FormatIso(static_cast<int64_t>(e.t)) + " " + e.text + "\n";
  }
  return core::Utf8Escaped(std::move(out));  // metadata keys
}

}  // namespace tiledbfs::fusefs
