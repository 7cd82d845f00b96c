// Decodes every data tile of the corpus array "filters" (one attribute per
// filter, see tests/data/corpus/README.md) and compares with TileDB's own
// read. The array is dense, one dimension [1,3000] in 25 tiles of 120 cells;
// the fragment written at t1 covers the whole domain, so its tiles in file
// order are the view at t1; the fragment at t2 is the one tile [1201,1320],
// which is the same range of the view at t2.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>

#include "core/filters/filter_pipeline.h"
#include "tests/core/filters/test_util.h"

namespace tiledbfs::core {
namespace {

using testing::CorpusPath;
using testing::MakeFilter;
using testing::ReadFileBytes;

Filter Compressor(FilterType t, int level = -1) {
  Filter f = MakeFilter(t);
  f.compression_level = level;
  return f;
}
Filter Window(FilterType t, uint32_t w) {
  Filter f = MakeFilter(t);
  f.max_window_size = w;
  return f;
}
Filter Scale() {
  Filter f = MakeFilter(FilterType::kScaleFloat);
  f.scale_byte_width = 2;
  f.scale_factor = 0.01;
  f.scale_offset = 10;
  return f;
}

struct Attr {
  std::string name;
  Datatype type;
  std::vector<Filter> filters;
  bool var = false;
  bool nullable = false;
};

// expected/filters/schema.json, in schema order (attribute i is a<i>.tdb).
std::vector<Attr> Attributes() {
  using T = FilterType;
  return {
      {"gzip", Datatype::kInt32, {Compressor(T::kGzip, 9)}},
      {"zstd", Datatype::kInt64, {Compressor(T::kZstd, 19)}},
      {"lz4", Datatype::kFloat32, {Compressor(T::kLz4)}},
      {"rle", Datatype::kInt32, {Compressor(T::kRle)}},
      {"rle_str", Datatype::kStringAscii, {Compressor(T::kRle)}, true},
      {"bzip2", Datatype::kUInt16, {Compressor(T::kBzip2)}},
      {"double_delta", Datatype::kInt64, {Compressor(T::kDoubleDelta)}},
      {"dictionary", Datatype::kStringAscii, {Compressor(T::kDictionary)}, true},
      {"delta", Datatype::kInt32, {Compressor(T::kDelta)}},
      {"bit_width_reduction", Datatype::kUInt32, {Window(T::kBitWidthReduction, 64)}},
      {"bitshuffle", Datatype::kInt32, {MakeFilter(T::kBitshuffle)}},
      {"byteshuffle", Datatype::kFloat64, {MakeFilter(T::kByteshuffle)}},
      {"positive_delta", Datatype::kUInt64, {Window(T::kPositiveDelta, 128)}},
      {"checksum_md5", Datatype::kInt32, {MakeFilter(T::kChecksumMd5)}},
      {"checksum_sha256", Datatype::kInt8, {MakeFilter(T::kChecksumSha256)}},
      {"scale_float", Datatype::kFloat64, {Scale()}},
      {"xor", Datatype::kFloat32, {MakeFilter(T::kXor)}},
      {"bitshuffle_zstd", Datatype::kFloat32, {MakeFilter(T::kBitshuffle), Compressor(T::kZstd)}},
      {"pdelta_bwr_lz4",
       Datatype::kUInt32,
       {Window(T::kPositiveDelta, 1024), Window(T::kBitWidthReduction, 256), Compressor(T::kLz4)}},
      {"byteshuffle_sha256_gzip",
       Datatype::kFloat64,
       {MakeFilter(T::kByteshuffle), MakeFilter(T::kChecksumSha256), Compressor(T::kGzip)}},
      {"str_zstd", Datatype::kStringUtf8, {Compressor(T::kZstd)}, true},
      {"null_i16_lz4", Datatype::kInt16, {Compressor(T::kLz4)}, false, true},
  };
}

FilterPipeline OffsetsPipeline() {
  return testing::Pipeline(
      {Window(FilterType::kPositiveDelta, 1024), Compressor(FilterType::kZstd)});
}
FilterPipeline ValidityPipeline() { return testing::Pipeline({Compressor(FilterType::kRle)}); }

FilterPipeline RoundTrip(const FilterPipeline& p) {
  ByteVec b = testing::SerializePipeline(p);
  ByteReader r(b);
  auto parsed = ParseFilterPipeline(r, 22);
  EXPECT_TRUE(parsed.ok()) << parsed.error().ToString();
  EXPECT_TRUE(r.empty());
  return parsed.ok() ? *parsed : p;
}

// Splits a data file into its tiles (stored back to back).
std::vector<Bytes> Tiles(const ByteVec& file) {
  std::vector<Bytes> out;
  uint64_t at = 0;
  while (at < file.size()) {
    auto n = FilteredTileSize(Bytes(file).subspan(at), at);
    EXPECT_TRUE(n.ok()) << n.error().ToString();
    if (!n.ok()) break;
    out.push_back(Bytes(file).subspan(at, *n));
    at += *n;
  }
  return out;
}

struct Column {
  ByteVec data;
  std::vector<uint64_t> offsets;  // var: n + 1 global offsets
  ByteVec validity;
};

Result<Column> DecodeColumn(const std::string& frag_dir, size_t index, const Attr& a) {
  const std::string base = frag_dir + "/a" + std::to_string(index);
  FilterPipeline data_pipeline = RoundTrip(testing::Pipeline(a.filters));
  TileContext ctx(DefaultLimits());
  ctx.type = a.type;
  ctx.cell_size = DatatypeSize(a.type);
  ctx.format_version = 22;
  Column col;
  if (!a.var) {
    ByteVec file = ReadFileBytes(base + ".tdb");
    ctx.file = fmt::format("a{}.tdb", index);
    for (Bytes tile : Tiles(file)) {
      ctx.file_offset = tile.data() - file.data();
      ASSIGN_OR_RETURN(ByteVec d, UnfilterTile(data_pipeline, tile, ctx));
      col.data.insert(col.data.end(), d.begin(), d.end());
    }
  } else {
    ByteVec off_file = ReadFileBytes(base + ".tdb");
    ByteVec var_file = ReadFileBytes(base + "_var.tdb");
    auto off_tiles = Tiles(off_file);
    auto var_tiles = Tiles(var_file);
    EXPECT_EQ(off_tiles.size(), var_tiles.size());
    TileContext octx(DefaultLimits());
    octx.type = Datatype::kUInt64;
    octx.cell_size = 8;
    octx.format_version = 22;
    octx.file = fmt::format("a{}.tdb", index);
    ctx.file = fmt::format("a{}_var.tdb", index);
    FilterPipeline offsets_pipeline = RoundTrip(OffsetsPipeline());
    for (size_t t = 0; t < off_tiles.size() && t < var_tiles.size(); ++t) {
      octx.file_offset = off_tiles[t].data() - off_file.data();
      ctx.file_offset = var_tiles[t].data() - var_file.data();
      ASSIGN_OR_RETURN(VarTile v, UnfilterVarTile(offsets_pipeline, off_tiles[t], octx,
                                                  data_pipeline, var_tiles[t], ctx, 0));
      for (uint64_t o : v.offsets) col.offsets.push_back(col.data.size() + o);
      col.data.insert(col.data.end(), v.data.begin(), v.data.end());
    }
    col.offsets.push_back(col.data.size());
  }
  if (a.nullable) {
    ByteVec file = ReadFileBytes(base + "_validity.tdb");
    TileContext vctx(DefaultLimits());
    vctx.type = Datatype::kUInt8;
    vctx.cell_size = 1;
    vctx.format_version = 22;
    vctx.file = fmt::format("a{}_validity.tdb", index);
    FilterPipeline validity_pipeline = RoundTrip(ValidityPipeline());
    for (Bytes tile : Tiles(file)) {
      vctx.file_offset = tile.data() - file.data();
      ASSIGN_OR_RETURN(ByteVec d, UnfilterTile(validity_pipeline, tile, vctx));
      col.validity.insert(col.validity.end(), d.begin(), d.end());
    }
  }
  return col;
}

std::vector<uint64_t> AsU64(const ByteVec& b) {
  std::vector<uint64_t> v(b.size() / 8);
  if (!b.empty()) std::memcpy(v.data(), b.data(), v.size() * 8);
  return v;
}

class FiltersCorpusTest : public ::testing::TestWithParam<size_t> {};

TEST_P(FiltersCorpusTest, FirstFragmentEqualsTileDbView) {
  const size_t i = GetParam();
  const Attr a = Attributes()[i];
  SCOPED_TRACE(a.name);
  std::string frag =
      testing::FindEntry(CorpusPath("arrays/filters/__fragments"), "__1700000001000");
  auto col = DecodeColumn(frag, i, a);
  ASSERT_TRUE(col.ok()) << col.error().ToString();
  std::string view = CorpusPath("expected/filters/views/1700000001000/") + a.name;
  EXPECT_TRUE(col->data == ReadFileBytes(view + ".data"));
  EXPECT_EQ(col->data.size(), ReadFileBytes(view + ".data").size());
  EXPECT_GE(col->data.size(), 3000u);
  if (a.var) {
    EXPECT_EQ(col->offsets, AsU64(ReadFileBytes(view + ".offsets")));
  }
  if (a.nullable) {
    EXPECT_EQ(col->validity.size(), 3000u);
    EXPECT_TRUE(col->validity == ReadFileBytes(view + ".validity"));
  }
}

TEST_P(FiltersCorpusTest, SecondFragmentEqualsItsRangeOfTheView) {
  const size_t i = GetParam();
  const Attr a = Attributes()[i];
  SCOPED_TRACE(a.name);
  std::string frag =
      testing::FindEntry(CorpusPath("arrays/filters/__fragments"), "__1700000002000");
  auto col = DecodeColumn(frag, i, a);
  ASSERT_TRUE(col.ok()) << col.error().ToString();
  std::string view = CorpusPath("expected/filters/views/1700000002000/") + a.name;
  ByteVec all = ReadFileBytes(view + ".data");
  const uint64_t first = 1200, last = 1320;  // cells [1201,1320], 0-based
  if (!a.var) {
    const uint64_t size = DatatypeSize(a.type);
    ASSERT_GE(all.size(), last * size);
    EXPECT_TRUE(col->data == ByteVec(all.begin() + first * size, all.begin() + last * size));
  } else {
    auto offsets = AsU64(ReadFileBytes(view + ".offsets"));
    ASSERT_GT(offsets.size(), last);
    EXPECT_TRUE(col->data == ByteVec(all.begin() + offsets[first], all.begin() + offsets[last]));
    ASSERT_EQ(col->offsets.size(), last - first + 1);
    for (uint64_t c = 0; c <= last - first; ++c) {
      EXPECT_EQ(col->offsets[c], offsets[first + c] - offsets[first]);
    }
  }
  if (a.nullable) {
    ByteVec v = ReadFileBytes(view + ".validity");
    EXPECT_TRUE(col->validity == ByteVec(v.begin() + first, v.begin() + last));
  }
}

// The first data tile of each attribute, damaged: every prefix is refused;
// every single-byte change either decodes or is refused, never crashes (the
// ASan/UBSan build runs this too).
TEST_P(FiltersCorpusTest, DamagedFirstTileIsHandled) {
  const size_t i = GetParam();
  const Attr a = Attributes()[i];
  SCOPED_TRACE(a.name);
  std::string frag =
      testing::FindEntry(CorpusPath("arrays/filters/__fragments"), "__1700000001000");
  std::string file = frag + "/a" + std::to_string(i) + (a.var ? "_var.tdb" : ".tdb");
  ByteVec bytes = ReadFileBytes(file);
  auto tiles = Tiles(bytes);
  ASSERT_FALSE(tiles.empty());
  ByteVec tile(tiles[0].begin(), tiles[0].end());
  FilterPipeline pipeline = testing::Pipeline(a.filters);
  TileContext ctx(DefaultLimits());
  ctx.type = a.type;
  ctx.cell_size = DatatypeSize(a.type);
  ctx.format_version = 22;
  ctx.file = fmt::format("a{}", i);
  auto decode = [&](Bytes t) -> bool {
    if (!a.var) return UnfilterTile(pipeline, t, ctx).ok();
    ByteVec empty(8, 0);  // var tiles here are decoded with their offsets
    TileContext octx(DefaultLimits());
    octx.type = Datatype::kUInt64;
    octx.cell_size = 8;
    return UnfilterVarTile(testing::Pipeline({}), empty, octx, pipeline, t, ctx, 0).ok();
  };
  if (!a.var || SkipsOffsetsFiltering(pipeline, a.type)) {
    ASSERT_TRUE(decode(tile));
  }
  for (size_t n = 0; n < tile.size(); ++n) {
    EXPECT_FALSE(decode(Bytes(tile.data(), n))) << "prefix " << n;
  }
  size_t decoded = 0;
  for (size_t at = 0; at < tile.size(); ++at) {
    ByteVec damaged = tile;
    damaged[at] ^= 0x5a;
    decoded += decode(damaged);
  }
  RecordProperty("damaged_tiles_decoded", std::to_string(decoded));
}

INSTANTIATE_TEST_SUITE_P(Attributes, FiltersCorpusTest, ::testing::Range<size_t>(0, 22),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return Attributes()[info.param].name;
                         });

}  // namespace
}  // namespace tiledbfs::core
