// The writer (core/write): serializers checked against our own parsers and
// against TileDB's bytes in the corpus, and whole arrays written into a
// temporary folder and read back through Array / ArrayView::ReadField with
// exactly the values written. (TileDB's own read of arrays we write is
// checked by hand with oracle_check.sh, which needs the workshop oracle.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/tile/generic_tile.h"
#include "core/write/filter_writer.h"
#include "core/write/fragment_writer.h"
#include "core/write/schema_writer.h"
#include "tests/core/write/raw_values.h"
#include "tests/core/write/temp_array.h"

namespace tiledbfs::core::writer_test {
namespace {

namespace fs = std::filesystem;
const fs::path kCorpus = fs::path(TILEDBFS_TEST_DATA) / "corpus";

Filter F(FilterType t, int32_t level = -1, uint32_t window = 0) {
  Filter f;
  f.type = t;
  f.compression_level = level;
  f.max_window_size = window;
  return f;
}
FilterPipeline P(std::vector<Filter> fs) {
  FilterPipeline p;
  p.version = kWriteFormatVersion;
  p.filters = std::move(fs);
  return p;
}

// ---------------------------------------------------------------- filters

TEST(FilterWriterTest, EveryWritableFilterRoundTripsThroughUnfilterTile) {
  std::vector<int32_t> values(70000);  // 280 KB: five chunks
  std::mt19937 rng(7);
  int32_t acc = 0;
  for (auto& v : values) v = acc += static_cast<int32_t>(rng() % 5);  // non-decreasing
  const ByteVec tile = Raw(values);
  std::vector<std::pair<std::string, FilterPipeline>> cases = {
      {"none", P({})},
      {"NONE", P({F(FilterType::kNone)})},
      {"ZSTD", P({F(FilterType::kZstd)})},
      {"LZ4", P({F(FilterType::kLz4)})},
      {"GZIP", P({F(FilterType::kGzip, 6)})},
      {"BZIP2", P({F(FilterType::kBzip2, 5)})},
      {"RLE", P({F(FilterType::kRle)})},
      {"BYTESHUFFLE+ZSTD", P({F(FilterType::kByteshuffle), F(FilterType::kZstd)})},
      {"BITSHUFFLE+LZ4", P({F(FilterType::kBitshuffle), F(FilterType::kLz4)})},
      {"POSITIVE_DELTA+ZSTD", P({F(FilterType::kPositiveDelta, 0, 1000), F(FilterType::kZstd)})},
      {"MD5+ZSTD", P({F(FilterType::kChecksumMd5), F(FilterType::kZstd)})},
      {"ZSTD+SHA256", P({F(FilterType::kZstd), F(FilterType::kChecksumSha256)})},
      {"SHUFFLE+MD5+GZIP+SHA256", P({F(FilterType::kByteshuffle), F(FilterType::kChecksumMd5),
                                     F(FilterType::kGzip, 1), F(FilterType::kChecksumSha256)})},
  };
  for (const auto& [name, p] : cases) {
    SCOPED_TRACE(name);
    auto filtered = FilterFixedTile(p, tile, Datatype::kInt32, 4);
    ASSERT_TRUE(filtered.ok()) << filtered.error().ToString();
    // The pipeline serializes and parses back to the same bytes.
    ByteWriter w;
    SerializeFilterPipeline(p, w);
    ByteReader r(w.bytes());
    auto parsed = ParseFilterPipeline(r, kWriteFormatVersion);
    ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
    EXPECT_TRUE(r.empty());
    TileContext ctx(DefaultLimits());
    ctx.type = Datatype::kInt32;
    ctx.cell_size = 4;
    ctx.format_version = kWriteFormatVersion;
    ctx.expected_size = tile.size();
    auto back = UnfilterTile(*parsed, *filtered, ctx);
    ASSERT_TRUE(back.ok()) << back.error().ToString();
    EXPECT_EQ(*back, tile);
    // Chunks of at most 64 KiB of whole cells.
    ByteReader cr(*filtered);
    EXPECT_EQ(*cr.Read<uint64_t>("n"), 5u);
    EXPECT_EQ(*cr.Read<uint32_t>("orig"), 65536u);
  }
}

TEST(FilterWriterTest, PositiveDeltaRefusesDecreasingValues) {
  ByteVec tile = Raw(std::vector<int64_t>{5, 4});
  auto r = FilterFixedTile(P({F(FilterType::kPositiveDelta, 0, 64)}), tile, Datatype::kInt64, 8);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("POSITIVE_DELTA"), std::string::npos);
}

TEST(FilterWriterTest, UnwritableFiltersAreUnsupported) {
  Status s = CheckWritablePipeline(P({F(FilterType::kDoubleDelta)}), Datatype::kInt32, false);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kUnsupported);
  s = CheckWritablePipeline(P({F(FilterType::kRle)}), Datatype::kStringAscii, true);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kUnsupported);
}

TEST(FilterWriterTest, VarDataTileKeepsCellsWholeAcrossChunks) {
  ByteVec data;
  std::vector<uint64_t> offsets;
  for (int i = 0; i < 3000; ++i) {
    offsets.push_back(data.size());
    std::string s(static_cast<size_t>(i % 97), static_cast<char>('a' + i % 26));
    data.insert(data.end(), s.begin(), s.end());
  }
  FilterPipeline dp = P({F(FilterType::kZstd)});
  FilterPipeline op = P({F(FilterType::kZstd)});
  auto vt = FilterVarDataTile(dp, data, Datatype::kStringAscii, offsets);
  ASSERT_TRUE(vt.ok());
  auto ot = FilterFixedTile(op, Raw(offsets), Datatype::kUInt64, 8);
  ASSERT_TRUE(ot.ok());
  // Every chunk boundary is a cell start.
  ByteReader r(*vt);
  uint64_t n = *r.Read<uint64_t>("n"), at = 0;
  EXPECT_GT(n, 1u);
  for (uint64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(std::binary_search(offsets.begin(), offsets.end(), at));
    uint32_t orig = *r.Read<uint32_t>("o"), filt = *r.Read<uint32_t>("f"),
             md = *r.Read<uint32_t>("m");
    ASSERT_TRUE(r.ReadBytes(uint64_t{filt} + md, "c").ok());
    at += orig;
  }
  EXPECT_EQ(at, data.size());
  TileContext octx(DefaultLimits()), dctx(DefaultLimits());
  octx.type = Datatype::kUInt64;
  octx.cell_size = 8;
  octx.format_version = dctx.format_version = kWriteFormatVersion;
  dctx.type = Datatype::kStringAscii;
  dctx.cell_size = 1;
  auto back = UnfilterVarTile(op, *ot, octx, dp, *vt, dctx, data.size());
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back->data, data);
  EXPECT_EQ(back->offsets, offsets);
}

TEST(FilterWriterTest, GenericTileDecodes) {
  for (uint64_t size : {0, 1, 100, 200000}) {
    ByteVec payload(size, 0);
    for (uint64_t i = 0; i < size; ++i) payload[i] = static_cast<uint8_t>(i * 7);
    auto t = EncodeGenericTile(payload, kWriteFormatVersion);
    ASSERT_TRUE(t.ok());
    auto back = DecodeGenericTile(*t, "x", 0, nullptr, DefaultLimits());
    ASSERT_TRUE(back.ok()) << back.error().ToString();
    EXPECT_EQ(back->data, payload);
    EXPECT_EQ(back->disk_size, t->size());
  }
}

// ---------------------------------------------------------------- schemas

// Corpus schemas of version 22 that version 22 writing covers serialize to
// exactly TileDB's bytes; their schema.json reads back to the same schema.
TEST(SchemaWriterTest, CorpusSchemasSerializeToTileDBsBytes) {
  int exact = 0;
  for (const auto& entry : fs::directory_iterator(kCorpus / "arrays")) {
    fs::path dir = entry.path() / "__schema";
    if (!fs::is_directory(dir) || fs::exists(entry.path().string() + ".key")) continue;
    for (const auto& f : fs::directory_iterator(dir)) {
      if (!f.is_regular_file()) continue;
      auto storage = LocalStorage::Open(dir.string());
      ASSERT_TRUE(storage.ok());
      auto tile =
          ReadGenericTile(**storage, f.path().filename().string(), 0, nullptr, DefaultLimits());
      ASSERT_TRUE(tile.ok());
      auto schema = ParseArraySchema(tile->data, 0, DefaultLimits());
      ASSERT_TRUE(schema.ok());
      if (schema->version != kWriteFormatVersion) continue;
      auto bytes = SerializeArraySchema(*schema, DefaultLimits());
      if (!bytes.ok()) {
        EXPECT_EQ(bytes.error().code(), ErrorCode::kUnsupported) << f.path();
        continue;
      }
      EXPECT_EQ(*bytes, tile->data) << f.path();
      // And through schema.json, the form the mount shows.
      std::string json = SchemaToJson(*schema, nullptr);
      auto from_json = SchemaFromJson(json, DefaultLimits());
      ASSERT_TRUE(from_json.ok()) << f.path() << ": " << from_json.error().ToString();
      auto again = SerializeArraySchema(*from_json, DefaultLimits());
      ASSERT_TRUE(again.ok());
      // The JSON form cannot tell a dimension's own filters from inherited
      // coords filters equal to them; it round trips as shown.
      EXPECT_EQ(SchemaToJson(*from_json, nullptr), json) << f.path();
      bool own_dim_filters = false;
      for (const Dimension& d : schema->dimensions) own_dim_filters |= !d.filters.empty();
      if (!own_dim_filters) {
        EXPECT_EQ(*again, tile->data) << f.path();
      }
      ++exact;
    }
  }
  EXPECT_GE(exact, 10);
}

TEST(SchemaWriterTest, BadJsonIsRejectedNamingTheKey) {
  auto r = SchemaFromJson(R"({"array_type":"dense","attrs":[]})", DefaultLimits());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("dims"), std::string::npos);
  r = SchemaFromJson(R"({"array_type":"sparse","dims":[{"name":"d","type":"INT33"}],"attrs":[]})",
                     DefaultLimits());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("unknown type"), std::string::npos);
  r = SchemaFromJson("not json", DefaultLimits());
  ASSERT_FALSE(r.ok());
  r = SchemaFromJson(R"({"array_type":"dense","dims":[
      {"name":"a","type":"INT32","domain":[1,4],"tile_extent":2},
      {"name":"b","type":"INT64","domain":[1,4],"tile_extent":2}],
      "attrs":[{"name":"v","type":"INT32"}]})",
                     DefaultLimits());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("one type"), std::string::npos);
}

// ---------------------------------------------------------------- arrays

class ArrayWriteTest : public ::testing::Test {
 protected:
  // Creates the array and returns its schema with its file name set.
  ArraySchema Create(const std::string& json) { return array_.Create(json); }
  std::shared_ptr<const ArrayView> View(uint64_t t = UINT64_MAX) { return array_.View(t); }
  Column Read(const ArrayView& v, const std::string& field) {
    auto c = v.ReadField(field);
    EXPECT_TRUE(c.ok()) << field << ": " << c.error().ToString();
    return c.ok() ? *c : Column{};
  }
  TempArray array_{"write"};
  const fs::path& dir_ = array_.root();
};

FieldCells Strings(const std::vector<std::string>& v) {
  FieldCells c;
  for (const std::string& s : v) {
    c.offsets.push_back(c.data.size());
    c.data.insert(c.data.end(), s.begin(), s.end());
  }
  return c;
}
std::vector<std::string> Strings(const Column& c) {
  std::vector<std::string> out;
  for (uint64_t i = 0; i < c.cell_count; ++i) out.push_back(ToString(c.cell(i)));
  return out;
}

TEST_F(ArrayWriteTest, Dense1DSeveralTilesAndAPartialOverwrite) {
  ArraySchema s = Create(R"({"array_type":"dense","dims":[
      {"name":"i","type":"INT64","domain":[0,99],"tile_extent":8}],
      "attrs":[{"name":"v","type":"FLOAT64","filters":["BYTESHUFFLE","ZSTD"]},
               {"name":"s","type":"STRING_ASCII","var":true,"filters":["ZSTD"]}]})");
  WriteBatch b1;
  std::vector<double> v1;
  std::vector<std::string> s1;
  for (int i = 0; i <= 39; ++i) {
    v1.push_back(i * 1.5);
    s1.push_back(std::string(static_cast<size_t>(i % 5), 'a' + i % 26));
  }
  b1.fields["v"].data = Raw(v1);
  b1.fields["s"] = Strings(s1);
  b1.subarray = {Range{One<int64_t>(0), One<int64_t>(39)}};
  ASSERT_TRUE(WriteFragment(dir_.string(), s, 2000, b1).ok());
  // A second fragment over cells 10..14, not tile-aligned.
  WriteBatch b2;
  b2.fields["v"].data = Raw(std::vector<double>{-1, -2, -3, -4, -5});
  b2.fields["s"] = Strings({"x", "", "yy", "zzz", "w"});
  b2.subarray = {Range{One<int64_t>(10), One<int64_t>(14)}};
  ASSERT_TRUE(WriteFragment(dir_.string(), s, 3000, b2).ok());

  auto first = View(2000);
  EXPECT_EQ(As<double>(Read(*first, "v").data), v1);
  EXPECT_EQ(Strings(Read(*first, "s")), s1);
  EXPECT_EQ(As<int64_t>(Read(*first, "i").data).back(), 39);

  auto latest = View();
  std::vector<double> v = v1;
  std::vector<std::string> st = s1;
  for (int k = 0; k < 5; ++k) {
    v[10 + k] = -(k + 1);
    st[10 + k] = std::vector<std::string>{"x", "", "yy", "zzz", "w"}[k];
  }
  EXPECT_EQ(As<double>(Read(*latest, "v").data), v);
  EXPECT_EQ(Strings(Read(*latest, "s")), st);
  // 5 tiles of 8 for the first write; cells 10..14 lie in one tile.
  ASSERT_EQ(latest->fragments().size(), 2u);
  EXPECT_EQ(latest->fragments()[0]->tile_num(), 5u);
  EXPECT_EQ(latest->fragments()[1]->tile_num(), 1u);
}

TEST_F(ArrayWriteTest, Dense2DColMajorWithNullable) {
  for (const char* order : {"row-major", "col-major"}) {
    SCOPED_TRACE(order);
    fs::remove_all(dir_);
    ArraySchema s = Create(std::string(R"({"array_type":"dense","tile_order":")") + order +
                           R"(","cell_order":")" + order + R"(","dims":[
        {"name":"r","type":"INT32","domain":[1,10],"tile_extent":3},
        {"name":"c","type":"INT32","domain":[1,7],"tile_extent":4}],
        "attrs":[{"name":"a","type":"INT32","filters":["ZSTD"]},
                 {"name":"n","type":"UINT8","nullable":true,"filters":["LZ4"]}]})");
    // Subarray rows 2..8, columns 3..7, row-major.
    WriteBatch b;
    std::vector<int32_t> a;
    std::vector<uint8_t> n;
    for (int r = 2; r <= 8; ++r) {
      for (int c = 3; c <= 7; ++c) {
        a.push_back(r * 10 + c);
        n.push_back(static_cast<uint8_t>(r + c));
        b.fields["n"].validity.push_back((r + c) % 4 != 0);
      }
    }
    b.fields["a"].data = Raw(a);
    b.fields["n"].data = Raw(n);
    b.subarray = {Range{One<int32_t>(2), One<int32_t>(8)}, Range{One<int32_t>(3), One<int32_t>(7)}};
    auto name = WriteFragment(dir_.string(), s, 2000, b);
    ASSERT_TRUE(name.ok()) << name.error().ToString();
    auto view = View();
    EXPECT_EQ(As<int32_t>(Read(*view, "a").data), a);
    Column nc = Read(*view, "n");
    EXPECT_EQ(As<uint8_t>(nc.data), n);
    EXPECT_EQ(nc.validity, b.fields["n"].validity);
    std::vector<int32_t> rows = As<int32_t>(Read(*view, "r").data);
    EXPECT_EQ(rows.front(), 2);
    EXPECT_EQ(rows.back(), 8);
  }
}

TEST_F(ArrayWriteTest, Sparse2DVarStringsNullableBothOrders) {
  for (const char* order : {"row-major", "col-major"}) {
    SCOPED_TRACE(order);
    fs::remove_all(dir_);
    ArraySchema s = Create(std::string(R"({"array_type":"sparse","capacity":4,"tile_order":")") +
                           order + R"(","cell_order":")" + order + R"(","dims":[
        {"name":"x","type":"INT32","domain":[0,99],"tile_extent":10},
        {"name":"y","type":"FLOAT64","domain":[-1,1],"tile_extent":0.5}],
        "attrs":[{"name":"v","type":"INT64","filters":["BYTESHUFFLE","ZSTD"]},
                 {"name":"t","type":"STRING_ASCII","var":true,"nullable":true,"filters":["ZSTD"]}]})");
    std::mt19937 rng(3);
    std::map<std::pair<int32_t, double>, std::pair<int64_t, std::optional<std::string>>> want;
    while (want.size() < 37) {
      int32_t x = static_cast<int32_t>(rng() % 100);
      double y = static_cast<double>(rng() % 2001) / 1000.0 - 1.0;
      int64_t v = static_cast<int64_t>(rng()) - (1ll << 31);
      std::optional<std::string> t;
      if (rng() % 3) t = std::string(rng() % 7, static_cast<char>('a' + rng() % 26));
      want[{x, y}] = {v, t};
    }
    // Written in a shuffled order: the writer sorts into the global order.
    std::vector<
        std::pair<std::pair<int32_t, double>, std::pair<int64_t, std::optional<std::string>>>>
        cells(want.begin(), want.end());
    std::shuffle(cells.begin(), cells.end(), rng);
    WriteBatch b;
    for (const auto& [k, val] : cells) {
      ByteVec x = One(k.first), y = One(k.second), v = One(val.first);
      b.fields["x"].data.insert(b.fields["x"].data.end(), x.begin(), x.end());
      b.fields["y"].data.insert(b.fields["y"].data.end(), y.begin(), y.end());
      b.fields["v"].data.insert(b.fields["v"].data.end(), v.begin(), v.end());
      FieldCells& t = b.fields["t"];
      t.offsets.push_back(t.data.size());
      t.validity.push_back(val.second.has_value());
      std::string str = val.second.value_or("");
      t.data.insert(t.data.end(), str.begin(), str.end());
    }
    auto name = WriteFragment(dir_.string(), s, 2000, b);
    ASSERT_TRUE(name.ok()) << name.error().ToString();
    auto view = View();
    Column x = Read(*view, "x"), y = Read(*view, "y"), v = Read(*view, "v"), t = Read(*view, "t");
    ASSERT_EQ(x.cell_count, want.size());
    auto xs = As<int32_t>(x.data);
    auto ys = As<double>(y.data);
    auto vs = As<int64_t>(v.data);
    for (uint64_t i = 0; i < x.cell_count; ++i) {
      auto it = want.find({xs[i], ys[i]});
      ASSERT_NE(it, want.end());
      EXPECT_EQ(vs[i], it->second.first);
      EXPECT_EQ(t.valid(i), it->second.second.has_value());
      if (t.valid(i)) {
        EXPECT_EQ(ToString(t.cell(i)), *it->second.second);
      }
    }
    // 37 cells in tiles of 4: 10 tiles, the last with 1 cell.
    ASSERT_EQ(view->fragments().size(), 1u);
    const auto& frag = *view->fragments()[0];
    EXPECT_EQ(frag.tile_num(), 10u);
    EXPECT_EQ(frag.footer().last_tile_cell_num, 1u);
    auto mbrs = frag.Mbrs();
    ASSERT_TRUE(mbrs.ok());
    EXPECT_EQ((*mbrs)->size(), 10u);
  }
}

TEST_F(ArrayWriteTest, FailedWritesLeaveNoFragment) {
  ArraySchema s = Create(R"({"array_type":"sparse","dims":[
      {"name":"x","type":"UINT64","domain":[0,1000],"tile_extent":10}],
      "attrs":[{"name":"v","type":"INT32"}]})");
  WriteBatch dup;
  dup.fields["x"].data = Raw(std::vector<uint64_t>{5, 7, 5});
  dup.fields["v"].data = Raw(std::vector<int32_t>{1, 2, 3});
  auto r = WriteFragment(dir_.string(), s, 2000, dup);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("same coordinates"), std::string::npos);

  WriteBatch outside;
  outside.fields["x"].data = Raw(std::vector<uint64_t>{1001});
  outside.fields["v"].data = Raw(std::vector<int32_t>{1});
  r = WriteFragment(dir_.string(), s, 2000, outside);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("outside the domain"), std::string::npos);

  WriteBatch missing;
  missing.fields["x"].data = Raw(std::vector<uint64_t>{1});
  r = WriteFragment(dir_.string(), s, 2000, missing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("'v'"), std::string::npos);

  EXPECT_TRUE(fs::is_empty(dir_ / "__fragments"));
  EXPECT_TRUE(fs::is_empty(dir_ / "__commits"));
}

}  // namespace
}  // namespace tiledbfs::core::writer_test

namespace tiledbfs::core::writer_test {
namespace {

// Rewrites the first fragment of a corpus array with our writer (the same
// cells, the same schema file) and compares every compression-independent
// part of the fragment metadata with what TileDB wrote: non-empty domain,
// tile counts, R-tree leaves, var sizes, tile and fragment min/max/sum/null
// counts.
void CheckRewrite(const std::string& array_name, uint64_t t1) {
  SCOPED_TRACE(array_name);
  fs::path src = kCorpus / "arrays" / array_name;
  fs::path dst = fs::temp_directory_path() /
                 ("tiledbfs_rewrite_" + std::to_string(::getpid()) + "_" + array_name);
  fs::remove_all(dst);
  fs::create_directories(dst);
  fs::copy(src / "__schema", dst / "__schema", fs::copy_options::recursive);

  auto open = [](const fs::path& p) {
    auto storage = LocalStorage::Open(p.string());
    EXPECT_TRUE(storage.ok());
    auto a = Array::Open(*storage, std::nullopt, DefaultLimits());
    EXPECT_TRUE(a.ok()) << a.error().ToString();
    return *a;
  };
  auto theirs = open(src);
  auto view = theirs->ViewAt(t1);
  ASSERT_TRUE(view.ok());
  ASSERT_EQ((*view)->fragments().size(), 1u);
  const FragmentMetadata& tf = *(*view)->fragments()[0];
  const ArraySchema& s = tf.schema();
  WriteBatch b;
  for (const Attribute& a : s.attributes) {
    auto c = (*view)->ReadField(a.name);
    ASSERT_TRUE(c.ok());
    FieldCells& fc = b.fields[a.name];
    fc.data = c->data;
    if (c->var()) fc.offsets.assign(c->offsets.begin(), c->offsets.end() - 1);
    fc.validity = c->validity;
  }
  if (s.dense()) {
    b.subarray = tf.footer().non_empty_domain;
  } else {
    for (const Dimension& d : s.dimensions) {
      auto c = (*view)->ReadField(d.name);
      ASSERT_TRUE(c.ok());
      b.fields[d.name].data = c->data;
      if (c->var()) b.fields[d.name].offsets.assign(c->offsets.begin(), c->offsets.end() - 1);
    }
  }
  auto name = WriteFragment(dst.string(), s, t1, b);
  ASSERT_TRUE(name.ok()) << name.error().ToString();
  auto ours_array = open(dst);
  auto ours_view = ours_array->ViewAt(t1);
  ASSERT_TRUE(ours_view.ok());
  const FragmentMetadata& of = *(*ours_view)->fragments()[0];

  EXPECT_EQ(of.footer().non_empty_domain, tf.footer().non_empty_domain);
  EXPECT_EQ(of.footer().sparse_tile_num, tf.footer().sparse_tile_num);
  EXPECT_EQ(of.footer().last_tile_cell_num, tf.footer().last_tile_cell_num);
  EXPECT_EQ(of.footer().file_sizes.size(), tf.footer().file_sizes.size());
  EXPECT_EQ(of.tile_num(), tf.tile_num());
  auto om = of.Mbrs(), tm = tf.Mbrs();
  ASSERT_EQ(om.ok(), tm.ok());
  if (om.ok()) {
    EXPECT_EQ(**om, **tm);
  }
  std::vector<FieldRef> refs;
  for (uint32_t i = 0; i < s.attributes.size(); ++i) refs.push_back(FieldRef::Attribute(i));
  for (uint32_t i = 0; i < s.dimensions.size(); ++i) refs.push_back(FieldRef::Dimension(i));
  refs.push_back(FieldRef::Coords());
  for (FieldRef f : refs) {
    SCOPED_TRACE(testing::Message()
                 << "field kind " << static_cast<int>(f.kind) << " index " << f.index);
    auto ov = of.TileVarSizes(f), tv = tf.TileVarSizes(f);
    ASSERT_EQ(ov.ok(), tv.ok());
    if (ov.ok()) {
      EXPECT_EQ(**ov, **tv);
    }
    auto oo = of.TileOffsets(f), to = tf.TileOffsets(f);
    ASSERT_EQ(oo.ok(), to.ok());
    if (oo.ok()) {
      EXPECT_EQ((*oo)->size(), (*to)->size());
    }
    auto os = of.Stats(f), ts = tf.Stats(f);
    ASSERT_EQ(os.ok(), ts.ok()) << (os.ok() ? std::string() : os.error().ToString());
    if (os.ok()) {
      EXPECT_EQ((*os)->mins, (*ts)->mins);
      EXPECT_EQ((*os)->maxs, (*ts)->maxs);
      EXPECT_EQ((*os)->sums, (*ts)->sums);
      EXPECT_EQ((*os)->null_counts, (*ts)->null_counts);
    }
  }
  auto ofs = of.FragmentStatistics(), tfs = tf.FragmentStatistics();
  ASSERT_TRUE(ofs.ok() && tfs.ok());
  ASSERT_EQ((*ofs)->size(), (*tfs)->size());
  for (size_t i = 0; i < (*ofs)->size(); ++i) {
    SCOPED_TRACE(testing::Message() << "fragment stats of field " << i);
    EXPECT_EQ((**ofs)[i].min, (**tfs)[i].min);
    EXPECT_EQ((**ofs)[i].max, (**tfs)[i].max);
    EXPECT_EQ((**ofs)[i].sum, (**tfs)[i].sum);
    EXPECT_EQ((**ofs)[i].null_count, (**tfs)[i].null_count);
  }
  fs::remove_all(dst);
}

TEST(RewriteTest, FragmentMetadataMatchesTileDBs) {
  CheckRewrite("dense_1d", 1700000001000);
  CheckRewrite("sparse_2d", 1700000001000);
}

}  // namespace
}  // namespace tiledbfs::core::writer_test

namespace tiledbfs::core::writer_test {
namespace {

// The tool end to end: create from schema.json, write CSVs, bad rows
// reported with their line number and nothing left behind.
class MkarrayToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tool_ = fs::path(TILEDBFS_BIN_DIR) / "tiledb-mkarray";
    if (!fs::exists(tool_)) GTEST_SKIP() << "tiledb-mkarray not built";
    dir_ = fs::temp_directory_path() / ("tiledbfs_mkarray_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Put(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  // Runs the tool; returns its exit status, stderr in *err.
  int Run(const std::string& args, std::string* err) {
    std::string cmd =
        tool_.string() + " " + args + " 2>" + (dir_ / "err.txt").string() + " >/dev/null";
    int rc = std::system(cmd.c_str());
    std::ifstream in(dir_ / "err.txt");
    *err = std::string(std::istreambuf_iterator<char>(in), {});
    return WEXITSTATUS(rc);
  }
  fs::path tool_, dir_;
};

TEST_F(MkarrayToolTest, CreateWriteAndBadRows) {
  Put("s.json", R"({"array_type":"dense","dims":[
      {"name":"r","type":"INT32","domain":[1,4],"tile_extent":2},
      {"name":"c","type":"INT32","domain":[1,4],"tile_extent":2}],
      "attrs":[{"name":"a","type":"INT32","filters":["ZSTD"]},
               {"name":"s","type":"STRING_ASCII","var":true,"nullable":true}]})");
  Put("ok.csv", "r,c,a,s\n2,2,22,\"x,y\"\n2,3,23,\n3,2,32,q\n3,3,33,\"\"\"z\"\"\"\n");
  Put("short.csv", "r,c,a,s\n1,1,11,a\n1,2,12\n");
  Put("type.csv", "r,c,a,s\n1,1,11,a\n1,2,1.5,b\n");
  Put("order.csv", "r,c,a,s\n1,2,11,a\n1,1,12,b\n");
  Put("domain.csv", "r,c,a,s\n5,1,11,a\n");
  const std::string arr = (dir_ / "arr").string();
  std::string err;
  ASSERT_EQ(Run("create " + arr + " --schema " + (dir_ / "s.json").string() +
                    " --timestamp 1700000000000",
                &err),
            0)
      << err;
  ASSERT_EQ(
      Run("write " + arr + " --timestamp 1700000001000 --csv " + (dir_ / "ok.csv").string(), &err),
      0)
      << err;
  EXPECT_EQ(
      Run("write " + arr + " --timestamp 1700000002000 --csv " + (dir_ / "short.csv").string(),
          &err),
      1);
  EXPECT_NE(err.find("short.csv:3: 3 fields, the header has 4"), std::string::npos) << err;
  EXPECT_EQ(Run("write " + arr + " --timestamp 1700000002000 --csv " + (dir_ / "type.csv").string(),
                &err),
            1);
  EXPECT_NE(err.find("type.csv:3: field 'a'"), std::string::npos) << err;
  EXPECT_EQ(
      Run("write " + arr + " --timestamp 1700000002000 --csv " + (dir_ / "order.csv").string(),
          &err),
      1);
  EXPECT_NE(err.find("row-major"), std::string::npos) << err;
  EXPECT_EQ(
      Run("write " + arr + " --timestamp 1700000002000 --csv " + (dir_ / "domain.csv").string(),
          &err),
      1);
  EXPECT_NE(err.find("outside the domain"), std::string::npos) << err;
  EXPECT_EQ(Run("create " + arr + " --schema " + (dir_ / "s.json").string(), &err), 1);
  EXPECT_NE(err.find("not empty"), std::string::npos) << err;

  // One fragment, one commit; the values read back.
  auto count = [](const fs::path& p) {
    return std::distance(fs::directory_iterator(p), fs::directory_iterator());
  };
  EXPECT_EQ(count(dir_ / "arr" / "__fragments"), 1);
  EXPECT_EQ(count(dir_ / "arr" / "__commits"), 1);
  auto storage = LocalStorage::Open(arr);
  ASSERT_TRUE(storage.ok());
  auto array = Array::Open(*storage, std::nullopt, DefaultLimits());
  ASSERT_TRUE(array.ok());
  auto view = (*array)->ViewAt(UINT64_MAX);
  ASSERT_TRUE(view.ok());
  auto a = (*view)->ReadField("a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(As<int32_t>(a->data), (std::vector<int32_t>{22, 23, 32, 33}));
  auto s = (*view)->ReadField("s");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(ToString(s->cell(0)), "x,y");
  EXPECT_FALSE(s->valid(1));
  EXPECT_EQ(ToString(s->cell(2)), "q");
  EXPECT_EQ(ToString(s->cell(3)), "\"z\"");
}

TEST_F(MkarrayToolTest, SyntheticIsReproducible) {
  Put("s.json", R"({"array_type":"sparse","capacity":100,"dims":[
      {"name":"k","type":"STRING_ASCII"},
      {"name":"x","type":"INT32","domain":[-50,50],"tile_extent":10}],
      "attrs":[{"name":"a","type":"FLOAT64","filters":["ZSTD"]},
               {"name":"s","type":"STRING_ASCII","var":true,"nullable":true}]})");
  std::string err;
  std::vector<ByteVec> data;
  for (const char* name : {"one", "two"}) {
    const std::string arr = (dir_ / name).string();
    ASSERT_EQ(Run("create " + arr + " --schema " + (dir_ / "s.json").string(), &err), 0) << err;
    ASSERT_EQ(Run("write " + arr + " --timestamp 1700000001000 --synthetic 5 --cells 777", &err), 0)
        << err;
    auto storage = LocalStorage::Open(arr);
    ASSERT_TRUE(storage.ok());
    auto array = Array::Open(*storage, std::nullopt, DefaultLimits());
    ASSERT_TRUE(array.ok());
    auto view = (*array)->ViewAt(UINT64_MAX);
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(*(*view)->CellCount(), 777u);
    auto a = (*view)->ReadField("a");
    ASSERT_TRUE(a.ok());
    data.push_back(a->data);
  }
  EXPECT_EQ(data[0], data[1]);
  // Too many distinct cells for the domain: an error, nothing left behind.
  Put("small.json", R"({"array_type":"sparse","dims":[
      {"name":"x","type":"INT32","domain":[1,5],"tile_extent":5}],
      "attrs":[{"name":"a","type":"INT32"}]})");
  const std::string small = (dir_ / "small").string();
  ASSERT_EQ(Run("create " + small + " --schema " + (dir_ / "small.json").string(), &err), 0);
  EXPECT_EQ(Run("write " + small + " --timestamp 1 --synthetic 1 --cells 6", &err), 1);
  EXPECT_NE(err.find("too small"), std::string::npos) << err;
  EXPECT_TRUE(fs::is_empty(dir_ / "small" / "__fragments"));
}

TEST_F(MkarrayToolTest, SyntheticFragmentsAndCountsFromTheCommandLine) {
  Put("s.json", R"({"array_type":"sparse","capacity":10,"dims":[
      {"name":"r","type":"INT64","domain":[0,99],"tile_extent":10},
      {"name":"c","type":"INT64","domain":[0,9],"tile_extent":10}],
      "attrs":[{"name":"a","type":"FLOAT64"}]})");
  Put("d.json", R"({"array_type":"dense","dims":[
      {"name":"r","type":"INT64","domain":[0,99],"tile_extent":10}],
      "attrs":[{"name":"a","type":"FLOAT64"}]})");
  const std::string arr = (dir_ / "s").string(), dense = (dir_ / "d").string();
  std::string err;
  ASSERT_EQ(Run("create " + arr + " --schema " + (dir_ / "s.json").string(), &err), 0) << err;
  ASSERT_EQ(Run("create " + dense + " --schema " + (dir_ / "d.json").string(), &err), 0) << err;
  ASSERT_EQ(Run("write " + arr + " --timestamp 50 --synthetic 4 --cells 5:9 --fragments 20", &err),
            0)
      << err;
  EXPECT_EQ(Run("write " + arr + " --timestamp 90 --synthetic 4 --cells 0", &err), 1);
  EXPECT_NE(err.find("--cells must be positive"), std::string::npos) << err;
  EXPECT_EQ(Run("write " + arr + " --timestamp 90 --synthetic 4 --fragments 101", &err), 1);
  EXPECT_NE(err.find("only 100 rows"), std::string::npos) << err;
  EXPECT_EQ(Run("write " + arr + " --timestamp 90 --synthetic x", &err), 1);
  EXPECT_NE(err.find("not a count"), std::string::npos) << err;
  EXPECT_EQ(Run("write " + dense + " --timestamp 90 --synthetic 1 --cells 5", &err), 1);
  EXPECT_NE(err.find("--cells is for sparse arrays"), std::string::npos) << err;
  EXPECT_EQ(Run("write " + dense + " --timestamp 90 --synthetic 1 --subarray 5:200", &err), 1);
  EXPECT_NE(err.find("outside the domain"), std::string::npos) << err;

  auto storage = LocalStorage::Open(arr);
  ASSERT_TRUE(storage.ok());
  auto array = Array::Open(*storage, std::nullopt, DefaultLimits());
  ASSERT_TRUE(array.ok());
  auto view = (*array)->ViewAt(UINT64_MAX);
  ASSERT_TRUE(view.ok());
  ASSERT_EQ((*view)->fragments().size(), 20u);
  uint64_t total = 0;
  for (size_t k = 0; k < 20; ++k) {
    const FragmentMetadata& f = *(*view)->fragments()[k];
    EXPECT_EQ(f.name().t1, 50 + k);
    const uint64_t cells = (f.footer().sparse_tile_num - 1) * 10 + f.footer().last_tile_cell_num;
    EXPECT_GE(cells, 5u);
    EXPECT_LE(cells, 9u);
    // Fragment k is row band k: rows 5k..5k+4.
    EXPECT_GE(As<int64_t>(f.footer().non_empty_domain[0].lo)[0], static_cast<int64_t>(5 * k));
    EXPECT_LE(As<int64_t>(f.footer().non_empty_domain[0].hi)[0], static_cast<int64_t>(5 * k + 4));
    total += cells;
  }
  EXPECT_EQ(*(*view)->CellCount(), total);
  auto count = [](const fs::path& p) {
    return std::distance(fs::directory_iterator(p), fs::directory_iterator());
  };
  EXPECT_EQ(count(dir_ / "s" / "__commits"), 20);
  EXPECT_TRUE(fs::is_empty(dir_ / "d" / "__fragments"));
}

}  // namespace
}  // namespace tiledbfs::core::writer_test
