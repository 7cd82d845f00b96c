// Data tiles of TileDB's own backward-compatibility arrays in the corpus.
#include <gtest/gtest.h>

#include <cstring>

#include "core/filters/filter_pipeline.h"
#include "tests/core/filters/test_util.h"

namespace tiledbfs::core {
namespace {

using testing::CorpusPath;
using testing::ReadFileBytes;

FilterPipeline Zstd(uint32_t version) {
  Filter f = testing::MakeFilter(FilterType::kZstd);
  f.compression_level = -1;
  return testing::Pipeline({f}, version, 65536);
}

TileContext Ctx(Datatype t, uint64_t cell_size, uint32_t version, std::string file) {
  TileContext c(DefaultLimits());
  c.type = t;
  c.cell_size = cell_size;
  c.format_version = version;
  c.file = std::move(file);
  return c;
}

// Format version 10: a var-sized string dimension whose only cell is the
// empty string; its var tile holds zero chunks.
TEST(LegacyTest, ZeroVarChunksV10) {
  std::string frag =
      testing::FindEntry(CorpusPath("arrays/legacy_zero_var_chunks_v10"),
                         "__1693562063524_1693562063524_0fcdefaa40d34ff2a4b09153472fbdc2_10");
  ByteVec off = ReadFileBytes(frag + "/d0.tdb");
  ByteVec var = ReadFileBytes(frag + "/d0_var.tdb");
  ASSERT_EQ(var.size(), 8u);
  auto v = UnfilterVarTile(Zstd(10), off, Ctx(Datatype::kUInt64, 8, 10, "d0.tdb"), Zstd(10), var,
                           Ctx(Datatype::kStringAscii, 1, 10, "d0_var.tdb"), 0);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->offsets, std::vector<uint64_t>{0});
  EXPECT_TRUE(v->data.empty());
  ByteVec expected =
      ReadFileBytes(CorpusPath("expected/legacy_zero_var_chunks_v10/views/latest/d.offsets"));
  EXPECT_EQ(expected.size(), 16u);  // [0, 0]: one empty string

  ByteVec a = ReadFileBytes(frag + "/a0.tdb");
  auto d =
      UnfilterTile(testing::Pipeline({}, 10, 65536), a, Ctx(Datatype::kInt32, 4, 10, "a0.tdb"));
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  EXPECT_TRUE(*d ==
              ReadFileBytes(CorpusPath("expected/legacy_zero_var_chunks_v10/views/latest/a.data")));
}

// Format version 1 (TileDB 1.4): already chunked; coordinates zipped in
// one file (d1, d2 per cell), two chunks of 16 bytes.
TEST(LegacyTest, NonSplitCoordsV1) {
  std::string frag =
      testing::FindEntry(CorpusPath("arrays/legacy_non_split_coords_v1_4_0"), "__5dc2");
  auto none = testing::Pipeline({}, 1, 65536);
  auto a = UnfilterTile(none, ReadFileBytes(frag + "/a.tdb"), Ctx(Datatype::kInt32, 4, 1, "a.tdb"));
  ASSERT_TRUE(a.ok()) << a.error().ToString();
  EXPECT_TRUE(*a == ReadFileBytes(
                        CorpusPath("expected/legacy_non_split_coords_v1_4_0/views/latest/a.data")));
  auto c = UnfilterTile(none, ReadFileBytes(frag + "/__coords.tdb"),
                        Ctx(Datatype::kInt32, 8, 1, "__coords.tdb"));
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  ByteVec d1 =
      ReadFileBytes(CorpusPath("expected/legacy_non_split_coords_v1_4_0/views/latest/d1.data"));
  ByteVec d2 =
      ReadFileBytes(CorpusPath("expected/legacy_non_split_coords_v1_4_0/views/latest/d2.data"));
  ASSERT_EQ(c->size(), d1.size() + d2.size());
  for (size_t i = 0; i < d1.size() / 4; ++i) {
    EXPECT_EQ(0, std::memcmp(c->data() + 8 * i, d1.data() + 4 * i, 4));
    EXPECT_EQ(0, std::memcmp(c->data() + 8 * i + 4, d2.data() + 4 * i, 4));
  }
}

}  // namespace
}  // namespace tiledbfs::core
