// Every schema file of the corpus loads, and SchemaToJson matches TileDB's
// own description of it (expected/<name>/schema.json, and the schema in force
// at each view instant in expected/<name>/views/<T>/view.json).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/schema/array_schema.h"
#include "core/storage/storage.h"
#include "core/util/text.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const std::string kCorpus = std::string(TILEDBFS_TEST_DATA) + "/corpus";

// Every array in the corpus (group members by their path under the group).
std::vector<std::string> CorpusArrays() {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(kCorpus + "/arrays")) {
    if (!e.is_directory()) continue;
    fs::path p = e.path();
    if (fs::exists(p / "__schema") || fs::exists(p / "__array_schema.tdb")) {
      out.push_back(fs::relative(p, kCorpus + "/arrays").string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Json ReadJson(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return Json::parse(in);
}

std::optional<EncryptionKey> KeyFor(const std::string& name) {
  std::ifstream in(kCorpus + "/arrays/" + name + ".key");
  if (!in) return std::nullopt;
  std::string hex;
  in >> hex;
  EncryptionKey key;
  if (hex.size() != 64) return std::nullopt;
  for (size_t i = 0; i < 32; ++i) key.bytes[i] = std::stoi(hex.substr(2 * i, 2), nullptr, 16);
  return key;
}

struct Loaded {
  ArraySchema schema;
  std::vector<Enumeration> enums;
};

// All schemas of an array, oldest first.
std::vector<Loaded> LoadAll(const std::string& name) {
  std::vector<Loaded> out;
  auto storage = LocalStorage::Open(kCorpus + "/arrays/" + name);
  EXPECT_TRUE(storage.ok());
  if (!storage.ok()) return out;
  auto key = KeyFor(name);
  std::vector<std::string> files;
  if ((*storage)->Exists("__array_schema.tdb")) files.push_back("__array_schema.tdb");
  if ((*storage)->IsDir("__schema")) {
    auto list = (*storage)->List("__schema");
    EXPECT_TRUE(list.ok());
    for (const DirEntry& e : *list) {
      if (!e.is_dir) files.push_back("__schema/" + e.name);
    }
  }
  for (const std::string& f : files) {
    auto s = LoadArraySchema(**storage, f, key ? &*key : nullptr, DefaultLimits());
    EXPECT_TRUE(s.ok()) << name << "/" << f << ": " << s.error().ToString();
    if (!s.ok()) continue;
    auto enums = LoadSchemaEnumerations(**storage, *s, key ? &*key : nullptr, DefaultLimits());
    EXPECT_TRUE(enums.ok()) << name << "/" << f << ": " << enums.error().ToString();
    if (!enums.ok()) continue;
    out.push_back({std::move(*s), std::move(*enums)});
  }
  std::stable_sort(out.begin(), out.end(), [](const Loaded& a, const Loaded& b) {
    return a.schema.timestamp_end < b.schema.timestamp_end;
  });
  return out;
}

// TileDB's rule: the newest schema whose end timestamp <= T, else the oldest.
const Loaded* SchemaAt(const std::vector<Loaded>& all, uint64_t t) {
  const Loaded* pick = all.empty() ? nullptr : &all.front();
  for (const Loaded& l : all) {
    if (l.schema.timestamp_end <= t) pick = &l;
  }
  return pick;
}

// TileDB's dump takes text fill values that are not UTF-8 as Latin-1 (the
// CHAR fill 0x80 as "\u0080"); ours writes \xHH (docs/namespace.md "Values"). The
// bytes are in fill_value_hex: the fill value by our rule.
Json ByOurTextRule(Json schema) {
  for (Json& a : schema["attrs"]) {
    const std::string type = a.value("type", "");
    if (type != "CHAR" && type != "STRING_ASCII" && type != "STRING_UTF8") continue;
    if (!a.contains("fill_value_hex") || !a["fill_value"].is_string()) continue;
    const std::string hex = a["fill_value_hex"].get<std::string>();
    std::string bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
      bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    }
    if (!ValidUtf8(bytes)) a["fill_value"] = Utf8Escaped(bytes);
  }
  return schema;
}

void ExpectSameJson(const Json& expected, const Loaded& got, const std::string& what) {
  Json mine = Json::parse(SchemaToJson(got.schema, &got.enums));
  const Json want = ByOurTextRule(expected);
  if (mine != want) {
    ADD_FAILURE() << what << ": schema JSON differs; patch from expected to ours:\n"
                  << Json::diff(want, mine).dump(1) << "\nours:\n"
                  << mine.dump(1);
  }
}

TEST(CorpusSchema, CoversTheCorpus) {
  auto arrays = CorpusArrays();
  EXPECT_GE(arrays.size(), 24u);
  for (const char* must :
       {"legacy_non_split_coords_v1_4_0", "legacy_zero_var_chunks_v10", "legacy_sparse_array_v11",
        "group/dense_a", "group/sparse_b", "group/sub/c_arr", "encrypted", "enumerations"}) {
    EXPECT_NE(std::find(arrays.begin(), arrays.end(), must), arrays.end()) << must;
  }
}

TEST(CorpusSchema, LatestSchemaMatchesExpected) {
  for (const std::string& name : CorpusArrays()) {
    SCOPED_TRACE(name);
    auto all = LoadAll(name);
    ASSERT_FALSE(all.empty());
    Json expected = ReadJson(kCorpus + "/expected/" + name + "/schema.json");
    ExpectSameJson(expected, all.back(), name + "/schema.json");
  }
}

TEST(CorpusSchema, SchemaInForceAtEveryViewMatches) {
  int views = 0;
  for (const std::string& name : CorpusArrays()) {
    auto all = LoadAll(name);
    ASSERT_FALSE(all.empty()) << name;
    fs::path dir = kCorpus + "/expected/" + name + "/views";
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      std::string t = e.path().filename().string();
      uint64_t at = t == "latest" ? UINT64_MAX : std::stoull(t);
      Json view = ReadJson((e.path() / "view.json").string());
      ExpectSameJson(view["schema"], *SchemaAt(all, at), name + "/views/" + t);
      ++views;
    }
  }
  EXPECT_GT(views, 50);
}

// The fields the brief names, checked one by one against the expected JSON
// (so a mismatch names the field even if the JSON writer changes).
TEST(CorpusSchema, FieldsMatchExpected) {
  for (const std::string& name : CorpusArrays()) {
    SCOPED_TRACE(name);
    auto all = LoadAll(name);
    ASSERT_FALSE(all.empty());
    const ArraySchema& s = all.back().schema;
    Json ex = ReadJson(kCorpus + "/expected/" + name + "/schema.json");
    EXPECT_EQ(s.version, ex["version"].get<uint32_t>());
    EXPECT_EQ(s.dense() ? "dense" : "sparse", ex["array_type"].get<std::string>());
    EXPECT_EQ(LayoutName(s.tile_order), ex["tile_order"].get<std::string>());
    EXPECT_EQ(LayoutName(s.cell_order), ex["cell_order"].get<std::string>());
    EXPECT_EQ(s.capacity, ex["capacity"].get<uint64_t>());
    EXPECT_EQ(s.allows_dups, ex["allows_dups"].get<bool>());
    EXPECT_EQ(s.timestamp_start, ex["timestamp_range"][0].get<uint64_t>());
    EXPECT_EQ(s.timestamp_end, ex["timestamp_range"][1].get<uint64_t>());
    ASSERT_EQ(s.dimensions.size(), ex["dims"].size());
    for (size_t i = 0; i < s.dimensions.size(); ++i) {
      const Dimension& d = s.dimensions[i];
      const Json& ed = ex["dims"][i];
      EXPECT_EQ(d.name, ed["name"].get<std::string>());
      EXPECT_EQ(DatatypeName(d.type), ed["type"].get<std::string>());
      EXPECT_EQ(d.cell_val_num, ed["cell_val_num"].get<uint32_t>());
      EXPECT_EQ(d.tile_extent.has_value(), !ed["tile_extent"].is_null());
      EXPECT_EQ(d.var(), ed["domain"].is_null());
    }
    ASSERT_EQ(s.attributes.size(), ex["attrs"].size());
    for (size_t i = 0; i < s.attributes.size(); ++i) {
      const Attribute& a = s.attributes[i];
      const Json& ea = ex["attrs"][i];
      EXPECT_EQ(a.name, ea["name"].get<std::string>());
      EXPECT_EQ(DatatypeName(a.type), ea["type"].get<std::string>());
      EXPECT_EQ(a.cell_val_num, ea["cell_val_num"].get<uint32_t>());
      EXPECT_EQ(a.nullable, ea["nullable"].get<bool>());
      std::string fill_hex;
      for (uint8_t c : a.fill_value) {
        static constexpr char kDigits[] = "0123456789abcdef";
        fill_hex += kDigits[c >> 4];
        fill_hex += kDigits[c & 15];
      }
      EXPECT_EQ(fill_hex, ea["fill_value_hex"].get<std::string>()) << a.name;
      ASSERT_EQ(a.filters.filters.size(), ea["filter_pipeline"]["filters"].size()) << a.name;
      EXPECT_EQ(a.filters.max_chunk_size, ea["filter_pipeline"]["max_chunk_size"].get<uint32_t>());
      EXPECT_EQ(a.enumeration_name.value_or(""), ea.value("enumeration", ""));
    }
    EXPECT_EQ(s.offsets_filters.filters.size(), ex["offsets_filters"]["filters"].size());
    EXPECT_EQ(s.validity_filters.filters.size(), ex["validity_filters"]["filters"].size());
    EXPECT_EQ(s.coords_filters.filters.size(), ex["coords_filters"]["filters"].size());
    EXPECT_EQ(!s.current_domain.empty, ex.contains("current_domain"));
  }
}

TEST(CorpusSchema, EnumerationExtensionPicksNewFile) {
  auto all = LoadAll("enumerations");
  ASSERT_EQ(all.size(), 2u);
  auto colors = [](const Loaded& l) {
    for (const Enumeration& e : l.enums) {
      if (e.name == "colors") return e.size();
    }
    return uint64_t{0};
  };
  EXPECT_EQ(colors(all[0]), 4u);
  EXPECT_EQ(colors(all[1]), 6u);
  EXPECT_NE(all[0].schema.FindEnumeration("colors")->path_name,
            all[1].schema.FindEnumeration("colors")->path_name);
  EXPECT_EQ(all[0].schema.FindEnumeration("levels")->path_name,
            all[1].schema.FindEnumeration("levels")->path_name);
}

TEST(CorpusSchema, LoaderErrors) {
  auto storage = LocalStorage::Open(kCorpus + "/arrays/encrypted");
  ASSERT_TRUE(storage.ok());
  auto list = (*storage)->List("__schema");
  ASSERT_TRUE(list.ok());
  std::string file = "__schema/" + list->front().name;
  auto no_key = LoadArraySchema(**storage, file, nullptr, DefaultLimits());
  ASSERT_FALSE(no_key.ok());
  EXPECT_EQ(no_key.error().code(), ErrorCode::kKey) << no_key.error().ToString();
  EXPECT_NE(no_key.error().message().find(file), std::string::npos);
  EncryptionKey wrong;
  auto bad = LoadArraySchema(**storage, file, &wrong, DefaultLimits());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kKey) << bad.error().ToString();

  auto missing = LoadArraySchema(**storage, "__schema/__nope", nullptr, DefaultLimits());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

TEST(CorpusSchema, TextSummary) {
  auto all = LoadAll("enumerations");
  ASSERT_FALSE(all.empty());
  std::string text = SchemaToText(all.back().schema, &all.back().enums);
  EXPECT_NE(text.find("Dense array, format version 22"), std::string::npos) << text;
  EXPECT_NE(text.find("color: UINT8"), std::string::npos) << text;
  EXPECT_NE(text.find("enumeration colors"), std::string::npos) << text;
  EXPECT_NE(text.find("\"purple\""), std::string::npos) << text;
  auto cd = LoadAll("current_domain");
  text = SchemaToText(cd.back().schema, nullptr);
  EXPECT_NE(text.find("current domain: x [0, 199] y [0, 99]"), std::string::npos) << text;
}

}  // namespace
}  // namespace tiledbfs::core
