#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/schema/array_schema.h"
#include "tests/core/schema/schema_builder.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tiledbfs::core {
namespace {

using Json = nlohmann::json;
using testing::AttrSpec;
using testing::BuildSchema;
using testing::DimSpec;
using testing::LabelSpec;
using testing::Le;
using testing::SchemaSpec;
using testing::VarRange;

ArraySchema Parse(const SchemaSpec& spec) {
  auto r = ParseArraySchema(BuildSchema(spec), 0, DefaultLimits());
  EXPECT_TRUE(r.ok()) << r.error().ToString();
  return r.ok() ? *r : ArraySchema{};
}

TEST(SchemaJson, DimensionFiltersFallBackToCoordsFilters) {
  SchemaSpec spec;  // coords filters: ZSTD; the dimension has none
  ArraySchema s = Parse(spec);
  EXPECT_TRUE(s.dimensions[0].filters.empty());
  EXPECT_EQ(&s.dim_filters(0), &s.coords_filters);
  Json j = Json::parse(SchemaToJson(s, nullptr));
  EXPECT_EQ(j["dims"][0]["filters"], Json::array({"ZSTD"}));

  // TileDB leaves dimensions of format < 5 with an empty pipeline.
  spec.version = 4;
  j = Json::parse(SchemaToJson(Parse(spec), nullptr));
  EXPECT_EQ(j["dims"][0]["filters"], Json::array());
  EXPECT_EQ(j["coords_filters"]["filters"][0]["name"], "ZSTD");
}

TEST(SchemaJson, ValuesOfEveryKind) {
  SchemaSpec spec;
  spec.dims = {
      DimSpec{
          .name = "k", .type = 11, .cell_val_num = kVarNum, .domain = {}, .extent = std::nullopt},
      DimSpec{
          .name = "f", .type = 3, .domain = Le<double>({-1.5, 2.25}), .extent = Le<double>({0.5})}};
  spec.attrs = {
      AttrSpec{
          .name = "nan", .type = 2, .fill = Le<float>({std::numeric_limits<float>::quiet_NaN()})},
      AttrSpec{.name = "inf",
               .type = 3,
               .cell_val_num = 2,
               .fill = Le<double>({-std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::infinity()})},
      AttrSpec{.name = "ch", .type = 4, .cell_val_num = 2, .fill = {0x80, 'a'}},
      AttrSpec{.name = "u16", .type = 13, .cell_val_num = kVarNum, .fill = {'h', 0, 'i', 0}},
      AttrSpec{.name = "blob", .type = 40, .cell_val_num = kVarNum, .fill = {0xde, 0xad}},
      AttrSpec{.name = "vi",
               .type = 0,
               .cell_val_num = kVarNum,
               .fill = Le<int32_t>({-3}),
               .nullable = true,
               .fill_validity = 1},
      AttrSpec{.name = "u64", .type = 10, .fill = Le<uint64_t>({UINT64_MAX})},
  };
  spec.labels = {LabelSpec{.dim = 1}};
  spec.cd_empty = false;
  spec.cd_ranges = {VarRange("aa", "zz"), Le<double>({-1.0, 1.0})};
  ArraySchema s = Parse(spec);
  s.name = "__5_6_abc";
  s.timestamp_start = 5;
  s.timestamp_end = 6;
  Json j = Json::parse(SchemaToJson(s, nullptr));
  EXPECT_EQ(j["timestamp_range"], Json::array({5, 6}));
  EXPECT_TRUE(j["dims"][0]["domain"].is_null());
  EXPECT_TRUE(j["dims"][0]["tile_extent"].is_null());
  EXPECT_EQ(j["dims"][1]["domain"], Json::array({-1.5, 2.25}));
  EXPECT_EQ(j["dims"][1]["tile_extent"], 0.5);
  const Json& a = j["attrs"];
  EXPECT_EQ(a[0]["fill_value"], "nan");
  EXPECT_EQ(a[0]["fill_value_hex"], "0000c07f");
  EXPECT_EQ(a[1]["fill_value"], Json::array({"-inf", "inf"}));
  EXPECT_EQ(a[2]["fill_value"], "\\x80a");  // not UTF-8: \xHH (docs/namespace.md "Values")
  EXPECT_EQ(a[3]["fill_value"], "hi");
  EXPECT_EQ(a[4]["fill_value"], "dead");
  EXPECT_EQ(a[5]["fill_value"], Json::array({-3}));
  EXPECT_EQ(a[5]["fill_validity"], 1);
  EXPECT_FALSE(a[4].contains("fill_validity"));
  EXPECT_EQ(a[6]["fill_value"], UINT64_MAX);
  EXPECT_EQ(j["current_domain"]["type"], "NDRECTANGLE");
  EXPECT_EQ(j["current_domain"]["ranges"], Json::parse(R"([["aa","zz"],[-1.0,1.0]])"));
  ASSERT_EQ(j["dimension_labels"].size(), 1u);
  EXPECT_EQ(j["dimension_labels"][0]["dimension"], "f");
  EXPECT_EQ(j["dimension_labels"][0]["label_order"], "increasing");
  EXPECT_EQ(j["dimension_labels"][0]["type"], "FLOAT64");

  std::string text = SchemaToText(s, nullptr);
  EXPECT_NE(text.find("f: FLOAT64, domain [-1.5, 2.25], tile extent 0.5"), std::string::npos)
      << text;
  EXPECT_NE(text.find("k: STRING_ASCII (var-sized)"), std::string::npos) << text;
  EXPECT_NE(text.find("lbl on dimension 1"), std::string::npos) << text;
  EXPECT_NE(text.find("current domain: k [\"aa\", \"zz\"] f [-1.0, 1.0]"), std::string::npos)
      << text;
}

TEST(SchemaJson, EnumerationsWithAndWithoutValues) {
  SchemaSpec spec;
  spec.attrs = {AttrSpec{.name = "a", .enumeration = "nums"}};
  spec.enums = {{"unused", "__u_0"}, {"nums", "__n_0"}};
  ArraySchema s = Parse(spec);
  Json j = Json::parse(SchemaToJson(s, nullptr));
  ASSERT_EQ(j["enumerations"].size(), 2u);
  EXPECT_EQ(j["enumerations"][0]["name"], "nums");  // referenced ones first
  EXPECT_EQ(j["enumerations"][0]["path_name"], "__n_0");
  EXPECT_EQ(j["attrs"][0]["enumeration"], "nums");

  Enumeration nums;
  nums.name = "nums";
  nums.type = Datatype::kInt16;
  nums.cell_val_num = 1;
  nums.ordered = true;
  nums.data = Le<int16_t>({-1, 7});
  std::vector<Enumeration> enums = {nums};
  j = Json::parse(SchemaToJson(s, &enums));
  EXPECT_EQ(j["enumerations"][0]["values"], Json::array({-1, 7}));
  EXPECT_EQ(j["enumerations"][0]["ordered"], true);
  EXPECT_EQ(j["enumerations"][0]["var"], false);
}

}  // namespace
}  // namespace tiledbfs::core
