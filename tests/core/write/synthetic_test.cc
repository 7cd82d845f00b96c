// The streaming writer (core/write/fragment_stream.h) and synthetic
// fragments (core/write/synthetic.h): multi-tile fragments written tile by
// tile read back exactly through Array / ArrayView, the batch path writes the
// same bytes as the streaming path, synthetic values depend only on the
// coordinates, sparse synthetic cells come distinct and in the global order.
#include "core/write/synthetic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/write/fragment_stream.h"
#include "core/write/fragment_writer.h"
#include "core/write/schema_writer.h"
#include "tests/core/write/raw_values.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

std::string ReadFileBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("tiledbfs_stream_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  ArraySchema Create(const std::string& name, const std::string& json) {
    auto s = SchemaFromJson(json, DefaultLimits());
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    auto file = CreateArray((root_ / name).string(), *s, 1000, DefaultLimits());
    EXPECT_TRUE(file.ok()) << file.error().ToString();
    ArraySchema out = *s;
    out.name = *file;
    return out;
  }
  std::shared_ptr<const ArrayView> View(const std::string& name, uint64_t t = UINT64_MAX) {
    auto storage = LocalStorage::Open((root_ / name).string());
    EXPECT_TRUE(storage.ok());
    auto array = Array::Open(*storage, std::nullopt, DefaultLimits());
    EXPECT_TRUE(array.ok()) << array.error().ToString();
    auto view = (*array)->ViewAt(t);
    EXPECT_TRUE(view.ok()) << view.error().ToString();
    return *view;
  }
  Column Read(const ArrayView& v, const std::string& field) {
    auto c = v.ReadField(field);
    EXPECT_TRUE(c.ok()) << field << ": " << c.error().ToString();
    return c.ok() ? *c : Column{};
  }
  fs::path root_;
};

// A dense 2D schema with many tiles in both orders, a float, a nullable
// int and a var string attribute.
std::string DenseSchema(const char* tile_order, const char* cell_order) {
  return std::string(R"({"array_type":"dense","tile_order":")") + tile_order +
         R"(","cell_order":")" + cell_order + R"(","dims":[
      {"name":"r","type":"INT64","domain":[-20,79],"tile_extent":16},
      {"name":"c","type":"INT64","domain":[0,36],"tile_extent":8}],
      "attrs":[{"name":"f","type":"FLOAT64","filters":["BYTESHUFFLE","ZSTD"]},
               {"name":"n","type":"INT32","nullable":true,"filters":["LZ4"]},
               {"name":"s","type":"STRING_ASCII","var":true,"filters":["ZSTD"]}]})";
}

double FValue(int64_t r, int64_t c) { return static_cast<double>(r) * 1000.0 + c + 0.25; }
int32_t NValue(int64_t r, int64_t c) { return static_cast<int32_t>(r * 37 + c); }
bool NValid(int64_t r, int64_t c) { return (r + c) % 5 != 0; }
std::string SValue(int64_t r, int64_t c) {
  return std::string(static_cast<size_t>((r + 20 + c) % 7), static_cast<char>('a' + (c % 26)));
}

// Values as a function of the coordinates, run by run.
class TestSource : public CellSource {
 public:
  Status AppendRun(const __int128* coords, size_t dim, uint64_t count,
                   std::vector<TileBuf>& tiles) override {
    for (uint64_t i = 0; i < count; ++i) {
      int64_t r = static_cast<int64_t>(coords[0]) + (dim == 0 ? static_cast<int64_t>(i) : 0);
      int64_t c = static_cast<int64_t>(coords[1]) + (dim == 1 ? static_cast<int64_t>(i) : 0);
      ByteVec f = One(FValue(r, c)), n = One(NValue(r, c));
      std::string s = SValue(r, c);
      tiles[0].data.insert(tiles[0].data.end(), f.begin(), f.end());
      ++tiles[0].cells;
      tiles[1].data.insert(tiles[1].data.end(), n.begin(), n.end());
      tiles[1].validity.push_back(NValid(r, c));
      ++tiles[1].cells;
      tiles[2].offsets.push_back(tiles[2].data.size());
      tiles[2].data.insert(tiles[2].data.end(), s.begin(), s.end());
      ++tiles[2].cells;
    }
    return Ok();
  }
};

TEST_F(StreamTest, MultiTileDenseStreamedReadsBackAndEqualsTheBatchPath) {
  for (auto [to, co] : {std::pair{"row-major", "row-major"}, std::pair{"col-major", "row-major"},
                        std::pair{"row-major", "col-major"}, std::pair{"col-major", "col-major"}}) {
    SCOPED_TRACE(std::string(to) + " tiles, " + co + " cells");
    fs::remove_all(root_);
    ArraySchema s = Create("streamed", DenseSchema(to, co));
    ArraySchema s2 = Create("batch", DenseSchema(to, co));
    s2.name = s.name;  // same schema file name, so the metadata bytes match
    fs::rename(root_ / "batch" / "__schema" /
                   fs::directory_iterator(root_ / "batch" / "__schema")->path().filename(),
               root_ / "batch" / "__schema" / s.name);
    // Rows -3..70, columns 5..30: not tile-aligned, 5 x 4 tiles.
    const int64_t r0 = -3, r1 = 70, c0 = 5, c1 = 30;
    std::vector<Range> sub = {Range{One<int64_t>(r0), One<int64_t>(r1)},
                              Range{One<int64_t>(c0), One<int64_t>(c1)}};
    TestSource src;
    auto name = WriteStreamedFragment(
        (root_ / "streamed").string(), s, 2000, 2000, sub,
        [&](FragmentFileWriter& w) -> Status { return WriteDenseTiles(w, sub, src); });
    ASSERT_TRUE(name.ok()) << name.error().ToString();

    WriteBatch b;
    std::vector<double> fs_;
    std::vector<int32_t> ns;
    ByteVec valid;
    std::vector<std::string> ss;
    for (int64_t r = r0; r <= r1; ++r) {
      for (int64_t c = c0; c <= c1; ++c) {
        fs_.push_back(FValue(r, c));
        ns.push_back(NValue(r, c));
        valid.push_back(NValid(r, c));
        ss.push_back(SValue(r, c));
        ByteVec f = One(FValue(r, c)), n = One(NValue(r, c));
        b.fields["f"].data.insert(b.fields["f"].data.end(), f.begin(), f.end());
        b.fields["n"].data.insert(b.fields["n"].data.end(), n.begin(), n.end());
        b.fields["n"].validity.push_back(NValid(r, c));
        b.fields["s"].offsets.push_back(b.fields["s"].data.size());
        b.fields["s"].data.insert(b.fields["s"].data.end(), ss.back().begin(), ss.back().end());
      }
    }
    b.subarray = sub;
    auto bname = WriteFragment((root_ / "batch").string(), s2, 2000, b);
    ASSERT_TRUE(bname.ok()) << bname.error().ToString();

    // Exactly the values written, through the reader (row-major over the
    // non-empty domain).
    auto v = View("streamed");
    ASSERT_EQ(v->fragments().size(), 1u);
    EXPECT_EQ(v->fragments()[0]->tile_num(), 20u);
    EXPECT_EQ(As<double>(Read(*v, "f").data), fs_);
    Column n = Read(*v, "n");
    EXPECT_EQ(As<int32_t>(n.data), ns);
    EXPECT_EQ(n.validity, valid);
    Column sc = Read(*v, "s");
    ASSERT_EQ(sc.cell_count, ss.size());
    for (uint64_t i = 0; i < sc.cell_count; ++i) ASSERT_EQ(ToString(sc.cell(i)), ss[i]) << i;

    // The batch path is the same writer: the same bytes in every file.
    const fs::path a = root_ / "streamed" / "__fragments" / *name;
    const fs::path c = root_ / "batch" / "__fragments" / *bname;
    size_t files = 0;
    for (const auto& e : fs::directory_iterator(a)) {
      SCOPED_TRACE(e.path().filename().string());
      EXPECT_EQ(ReadFileBytes(e.path()), ReadFileBytes(c / e.path().filename()));
      ++files;
    }
    EXPECT_EQ(files, 6u);  // a0, a1, a1_validity, a2, a2_var, __fragment_metadata
  }
}

TEST_F(StreamTest, FailingProducerLeavesNothing) {
  ArraySchema s = Create("a", DenseSchema("row-major", "row-major"));
  std::vector<Range> sub = {Range{One<int64_t>(0), One<int64_t>(40)},
                            Range{One<int64_t>(0), One<int64_t>(20)}};
  int calls = 0;
  auto r = WriteStreamedFragment((root_ / "a").string(), s, 2000, 2000, sub,
                                 [&](FragmentFileWriter& w) -> Status {
                                   TestSource src;
                                   TRY(WriteDenseTiles(w, sub, src));
                                   ++calls;
                                   return Error::Io("disk full");
                                 });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kIo);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(fs::is_empty(root_ / "a" / "__fragments"));
  EXPECT_TRUE(fs::is_empty(root_ / "a" / "__commits"));
  // A tile of the wrong size is refused.
  r = WriteStreamedFragment((root_ / "a").string(), s, 2000, 2000, sub,
                            [&](FragmentFileWriter& w) -> Status {
                              TestSource src;
                              __int128 c[2] = {0, 0};
                              TRY(src.AppendRun(c, 1, 3, w.tile()));
                              return w.FlushTile();
                            });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("dense tile of 3 cells"), std::string::npos)
      << r.error().ToString();
  EXPECT_TRUE(fs::is_empty(root_ / "a" / "__fragments"));
}

// ---------------------------------------------------------------- synthetic

const char* kSyntheticAttrs = R"("attrs":[
    {"name":"f","type":"FLOAT64","filters":["BYTESHUFFLE","ZSTD"]},
    {"name":"i","type":"INT16","nullable":true,"filters":["ZSTD"]},
    {"name":"s","type":"STRING_ASCII","var":true,"nullable":true,"filters":["ZSTD"]},
    {"name":"v","type":"INT32","var":true,"filters":["LZ4"]},
    {"name":"ch","type":"CHAR","cell_val_num":3}])";

std::string SyntheticDense(const char* order) {
  return std::string(R"({"array_type":"dense","tile_order":")") + order + R"(","cell_order":")" +
         order + R"(","dims":[
      {"name":"r","type":"INT64","domain":[-30,89],"tile_extent":32},
      {"name":"c","type":"INT64","domain":[0,49],"tile_extent":16}],)" +
         kSyntheticAttrs + "}";
}

SyntheticSpec Spec(uint64_t seed, std::vector<Range> sub = {}, uint64_t fragments = 1) {
  SyntheticSpec s;
  s.seed = seed;
  s.subarray = std::move(sub);
  s.fragments = fragments;
  return s;
}

// Every attribute of every cell of the latest view, as strings.
std::vector<std::vector<std::string>> Cells(const ArrayView& v, const ArraySchema& s) {
  std::vector<std::vector<std::string>> out;
  for (const Attribute& a : s.attributes) {
    auto c = v.ReadField(a.name);
    EXPECT_TRUE(c.ok());
    if (!c.ok()) return out;
    out.resize(c->cell_count);
    for (uint64_t i = 0; i < c->cell_count; ++i) {
      out[i].push_back(c->valid(i) ? ToString(c->cell(i)) : std::string("<null>"));
    }
  }
  return out;
}

TEST_F(StreamTest, SyntheticValuesDependOnlyOnCoordinates) {
  for (const char* order : {"row-major", "col-major"}) {
    SCOPED_TRACE(order);
    fs::remove_all(root_);
    // One fragment over the whole domain.
    ArraySchema one = Create("one", SyntheticDense(order));
    auto w1 = WriteSyntheticFragments((root_ / "one").string(), one, 10, Spec(7));
    ASSERT_TRUE(w1.ok()) << w1.error().ToString();
    // The same seed in 5 row bands, then two overlapping writes.
    ArraySchema many = Create("many", SyntheticDense(order));
    auto w2 = WriteSyntheticFragments((root_ / "many").string(), many, 10, Spec(7, {}, 5));
    ASSERT_TRUE(w2.ok()) << w2.error().ToString();
    ASSERT_EQ(w2->size(), 5u);
    auto w3 = WriteSyntheticFragments((root_ / "many").string(), many, 20,
                                      Spec(7, {Range{One<int64_t>(-7), One<int64_t>(60)},
                                               Range{One<int64_t>(3), One<int64_t>(41)}}));
    ASSERT_TRUE(w3.ok()) << w3.error().ToString();
    auto w4 = WriteSyntheticFragments((root_ / "many").string(), many, 30,
                                      Spec(7, {Range{One<int64_t>(50), One<int64_t>(89)},
                                               Range{One<int64_t>(0), One<int64_t>(9)}}));
    ASSERT_TRUE(w4.ok()) << w4.error().ToString();

    auto v1 = View("one");
    auto v2 = View("many");
    EXPECT_EQ(v2->fragments().size(), 7u);
    // Bands: consecutive timestamps, 24 rows each.
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_EQ(v2->fragments()[k]->name().t1, 10 + k);
      EXPECT_EQ(v2->fragments()[k]->footer().non_empty_domain[0].lo,
                One<int64_t>(-30 + 24 * static_cast<int64_t>(k)));
    }
    auto a = Cells(*v1, one), b = Cells(*v2, many);
    ASSERT_EQ(a.size(), 120u * 50u);
    EXPECT_EQ(a, b);
    // Every attribute got values: nulls, empty and long strings, var numbers.
    std::set<size_t> lengths;
    size_t nulls = 0;
    for (const auto& cell : a) {
      lengths.insert(cell[2].size());
      nulls += cell[1] == "<null>";
      EXPECT_EQ(cell[4].size(), 3u);
    }
    EXPECT_GT(nulls, a.size() / 20);
    EXPECT_LT(nulls, a.size() / 5);
    EXPECT_GE(lengths.size(), 12u);
    // A different seed gives different values.
    ArraySchema other = Create("other", SyntheticDense(order));
    ASSERT_TRUE(WriteSyntheticFragments((root_ / "other").string(), other, 10, Spec(8)).ok());
    auto c = Cells(*View("other"), other);
    size_t same = 0;
    for (size_t i = 0; i < a.size(); ++i) same += a[i][0] == c[i][0];
    EXPECT_LT(same, a.size() / 100);
  }
}

std::string SyntheticSparse(const char* tile_order, const char* cell_order, int capacity) {
  return std::string(R"({"array_type":"sparse","capacity":)") + std::to_string(capacity) +
         R"(,"tile_order":")" + tile_order + R"(","cell_order":")" + cell_order + R"(","dims":[
      {"name":"r","type":"INT64","domain":[-30,89],"tile_extent":32},
      {"name":"c","type":"INT64","domain":[0,49],"tile_extent":16}],)" +
         kSyntheticAttrs + "}";
}

// (tile index per dimension in tile order, coordinates in cell order)
std::vector<__int128> GlobalKey(const ArraySchema& s, const __int128* c) {
  const size_t D = s.dimensions.size();
  std::vector<__int128> key;
  for (size_t p = 0; p < D; ++p) {
    size_t d = s.tile_order == Layout::kColMajor ? D - 1 - p : p;
    __int128 lo = *DimensionValue(s.dimensions[d].type, s.dimensions[d].domain.lo);
    __int128 ext = *DimensionValue(s.dimensions[d].type, *s.dimensions[d].tile_extent);
    key.push_back((c[d] - lo) / ext);
  }
  for (size_t p = 0; p < D; ++p)
    key.push_back(c[s.cell_order == Layout::kColMajor ? D - 1 - p : p]);
  return key;
}

TEST_F(StreamTest, SparseSamplesAreDistinctInTheGlobalOrder) {
  for (auto [to, co] : {std::pair{"row-major", "row-major"}, std::pair{"col-major", "row-major"},
                        std::pair{"row-major", "col-major"}, std::pair{"col-major", "col-major"}}) {
    SCOPED_TRACE(std::string(to) + " tiles, " + co + " cells");
    auto s = SchemaFromJson(SyntheticSparse(to, co, 50), DefaultLimits());
    ASSERT_TRUE(s.ok());
    std::vector<__int128> lo = {-25, 3}, hi = {77, 40};
    const uint64_t box = 103 * 38;
    for (uint64_t n : {uint64_t{1}, uint64_t{10}, uint64_t{500}, box / 2, box - 1, box}) {
      SCOPED_TRACE(n);
      std::vector<std::vector<__int128>> keys;
      auto st = SampleSparseCells(*s, lo, hi, n, 99, [&](const __int128* c) -> Status {
        EXPECT_TRUE(c[0] >= lo[0] && c[0] <= hi[0] && c[1] >= lo[1] && c[1] <= hi[1]);
        keys.push_back(GlobalKey(*s, c));
        return Ok();
      });
      ASSERT_TRUE(st.ok()) << st.error().ToString();
      ASSERT_EQ(keys.size(), n);
      // Strictly increasing: in the global order and distinct.
      for (size_t i = 1; i < keys.size(); ++i) ASSERT_LT(keys[i - 1], keys[i]) << i;
    }
    auto too_many = SampleSparseCells(*s, lo, hi, box + 1, 1, [](const __int128*) { return Ok(); });
    ASSERT_FALSE(too_many.ok());
    EXPECT_EQ(too_many.error().code(), ErrorCode::kInvalidArgument);
  }
}

TEST_F(StreamTest, SparseSyntheticFragmentsReadBackWithTheDenseValues) {
  // The same attributes and seed in a dense array: the sparse cells must
  // hold the dense array's values at their coordinates.
  ArraySchema dense = Create("dense", SyntheticDense("row-major"));
  ASSERT_TRUE(WriteSyntheticFragments((root_ / "dense").string(), dense, 10, Spec(3)).ok());
  auto dv = View("dense");
  auto dense_cells = Cells(*dv, dense);
  auto cell_at = [&](int64_t r, int64_t c) { return dense_cells[(r + 30) * 50 + c]; };

  ArraySchema s = Create("sparse", SyntheticSparse("col-major", "row-major", 37));
  SyntheticSpec spec = Spec(3, {}, 4);
  spec.cells_min = 100;
  spec.cells_max = 400;
  auto names = WriteSyntheticFragments((root_ / "sparse").string(), s, 100, spec);
  ASSERT_TRUE(names.ok()) << names.error().ToString();
  ASSERT_EQ(names->size(), 4u);
  auto v = View("sparse");
  ASSERT_EQ(v->fragments().size(), 4u);
  uint64_t total = 0;
  for (size_t k = 0; k < 4; ++k) {
    const FragmentMetadata& f = *v->fragments()[k];
    EXPECT_EQ(f.name().t1, 100 + k);
    uint64_t cells = f.footer().sparse_tile_num == 0
                         ? 0
                         : (f.footer().sparse_tile_num - 1) * 37 + f.footer().last_tile_cell_num;
    EXPECT_GE(cells, 100u);
    EXPECT_LE(cells, 400u);
    // Fragment k lies in row band k (30 rows each).
    EXPECT_EQ(f.footer().non_empty_domain[0].lo.size(), 8u);
    int64_t lo = As<int64_t>(f.footer().non_empty_domain[0].lo)[0];
    int64_t hi = As<int64_t>(f.footer().non_empty_domain[0].hi)[0];
    EXPECT_GE(lo, -30 + 30 * static_cast<int64_t>(k));
    EXPECT_LE(hi, -1 + 30 * static_cast<int64_t>(k));
    total += cells;
  }
  Column r = Read(*v, "r"), c = Read(*v, "c");
  ASSERT_EQ(r.cell_count, total);
  auto rs = As<int64_t>(r.data), cs = As<int64_t>(c.data);
  auto cells = Cells(*v, s);
  std::set<std::pair<int64_t, int64_t>> seen;
  for (uint64_t i = 0; i < total; ++i) {
    EXPECT_TRUE(seen.insert({rs[i], cs[i]}).second);
    ASSERT_EQ(cells[i], cell_at(rs[i], cs[i])) << rs[i] << "," << cs[i];
  }
  // The same call again writes the same cells.
  ArraySchema s2 = Create("sparse2", SyntheticSparse("col-major", "row-major", 37));
  ASSERT_TRUE(WriteSyntheticFragments((root_ / "sparse2").string(), s2, 100, spec).ok());
  auto v2 = View("sparse2");
  EXPECT_EQ(As<int64_t>(Read(*v2, "r").data), rs);
  EXPECT_EQ(Cells(*v2, s2), cells);
}

TEST_F(StreamTest, SyntheticRefusesImpossibleRequests) {
  ArraySchema s = Create("a", SyntheticSparse("row-major", "row-major", 10));
  SyntheticSpec spec =
      Spec(1, {Range{One<int64_t>(0), One<int64_t>(1)}, Range{One<int64_t>(0), One<int64_t>(2)}});
  spec.cells_min = spec.cells_max = 7;  // 6 cells in the box
  auto r = WriteSyntheticFragments((root_ / "a").string(), s, 10, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("box of 6 cells is too small"), std::string::npos)
      << r.error().ToString();
  spec.cells_min = spec.cells_max = 1;
  spec.fragments = 3;  // 2 rows
  r = WriteSyntheticFragments((root_ / "a").string(), s, 10, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("only 2 rows"), std::string::npos) << r.error().ToString();
  spec.fragments = 1;
  spec.subarray[0].hi = One<int64_t>(90);  // outside the domain
  r = WriteSyntheticFragments((root_ / "a").string(), s, 10, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("outside the domain"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(root_ / "a" / "__fragments"));
  EXPECT_TRUE(fs::is_empty(root_ / "a" / "__commits"));
}

}  // namespace
}  // namespace tiledbfs::core
