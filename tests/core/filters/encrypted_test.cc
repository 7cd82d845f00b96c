// Decodes the data tiles of the corpus array "encrypted" (AES-256-GCM, see
// tests/data/corpus/README.md) with the key in arrays/encrypted.key and
// compares with TileDB's read at t1. Dense, r, c INT32 [1,6] x [1,6], tiles
// 3x3 in row-major tile and cell order; `a` INT32 (ZSTD), `s` var
// STRING_UTF8 (no filters; offsets ZSTD); max chunk size 65536.
#include <gtest/gtest.h>

#include <cstring>

#include "core/filters/filter_pipeline.h"
#include "tests/core/filters/test_util.h"

namespace tiledbfs::core::encrypted_test {
namespace {

using testing::CorpusPath;
using testing::ReadFileBytes;

EncryptionKey CorpusKey() {
  ByteVec hex = ReadFileBytes(CorpusPath("arrays/encrypted.key"));
  return testing::KeyFromHex(std::string(hex.begin(), hex.end()));
}

FilterPipeline Zstd() {
  Filter f = testing::MakeFilter(FilterType::kZstd);
  f.compression_level = -1;
  return testing::Pipeline({f}, 22, 65536);
}

std::vector<Bytes> Tiles(const ByteVec& file) {
  std::vector<Bytes> out;
  uint64_t at = 0;
  while (at < file.size()) {
    auto n = FilteredTileSize(Bytes(file).subspan(at), at);
    EXPECT_TRUE(n.ok());
    if (!n.ok()) break;
    out.push_back(Bytes(file).subspan(at, *n));
    at += *n;
  }
  return out;
}

// Cell k of tile t (both row-major) in the row-major view of the 6x6 domain.
size_t ViewIndex(size_t t, size_t k) { return (t / 2 * 3 + k / 3) * 6 + (t % 2 * 3 + k % 3); }

std::string Fragment() {
  return testing::FindEntry(CorpusPath("arrays/encrypted/__fragments"), "__1700000001000");
}

TileContext Context(Datatype type, uint64_t cell_size, const EncryptionKey* key,
                    const std::string& file) {
  TileContext ctx(DefaultLimits());
  ctx.type = type;
  ctx.cell_size = cell_size;
  ctx.format_version = 22;
  ctx.key = key;
  ctx.encrypted = true;
  ctx.file = file;
  return ctx;
}

TEST(EncryptedCorpusTest, FixedAttributeEqualsTileDbView) {
  EncryptionKey key = CorpusKey();
  ByteVec file = ReadFileBytes(Fragment() + "/a0.tdb");
  ByteVec expected = ReadFileBytes(CorpusPath("expected/encrypted/views/1700000001000/a.data"));
  ASSERT_EQ(expected.size(), 36u * 4);
  auto tiles = Tiles(file);
  ASSERT_EQ(tiles.size(), 4u);
  TileContext ctx = Context(Datatype::kInt32, 4, &key, "a0.tdb");
  for (size_t t = 0; t < tiles.size(); ++t) {
    ctx.file_offset = tiles[t].data() - file.data();
    auto d = UnfilterTile(Zstd(), tiles[t], ctx);
    ASSERT_TRUE(d.ok()) << d.error().ToString();
    ASSERT_EQ(d->size(), 9u * 4);
    for (size_t k = 0; k < 9; ++k) {
      EXPECT_EQ(0, std::memcmp(d->data() + k * 4, expected.data() + ViewIndex(t, k) * 4, 4))
          << "tile " << t << " cell " << k;
    }
  }
}

TEST(EncryptedCorpusTest, VarAttributeEqualsTileDbView) {
  EncryptionKey key = CorpusKey();
  ByteVec off_file = ReadFileBytes(Fragment() + "/a1.tdb");
  ByteVec var_file = ReadFileBytes(Fragment() + "/a1_var.tdb");
  ByteVec data = ReadFileBytes(CorpusPath("expected/encrypted/views/1700000001000/s.data"));
  ByteVec raw = ReadFileBytes(CorpusPath("expected/encrypted/views/1700000001000/s.offsets"));
  std::vector<uint64_t> offsets(raw.size() / 8);
  std::memcpy(offsets.data(), raw.data(), raw.size());
  ASSERT_EQ(offsets.size(), 37u);
  auto off_tiles = Tiles(off_file);
  auto var_tiles = Tiles(var_file);
  ASSERT_EQ(off_tiles.size(), 4u);
  ASSERT_EQ(var_tiles.size(), 4u);
  TileContext octx = Context(Datatype::kUInt64, 8, &key, "a1.tdb");
  TileContext vctx = Context(Datatype::kStringUtf8, 1, &key, "a1_var.tdb");
  for (size_t t = 0; t < 4; ++t) {
    octx.file_offset = off_tiles[t].data() - off_file.data();
    vctx.file_offset = var_tiles[t].data() - var_file.data();
    auto v = UnfilterVarTile(Zstd(), off_tiles[t], octx, testing::Pipeline({}, 22, 65536),
                             var_tiles[t], vctx, 0);
    ASSERT_TRUE(v.ok()) << v.error().ToString();
    ASSERT_EQ(v->offsets.size(), 9u);
    for (size_t k = 0; k < 9; ++k) {
      uint64_t end = k + 1 < 9 ? v->offsets[k + 1] : v->data.size();
      std::string got(v->data.begin() + v->offsets[k], v->data.begin() + end);
      size_t i = ViewIndex(t, k);
      std::string want(data.begin() + offsets[i], data.begin() + offsets[i + 1]);
      EXPECT_EQ(got, want) << "tile " << t << " cell " << k;
    }
  }
}

TEST(EncryptedCorpusTest, WrongOrMissingKeyIsKeyError) {
  ByteVec file = ReadFileBytes(Fragment() + "/a0.tdb");
  auto tiles = Tiles(file);
  ASSERT_FALSE(tiles.empty());
  EncryptionKey wrong = CorpusKey();
  wrong.bytes[31] ^= 0x80;
  TileContext ctx = Context(Datatype::kInt32, 4, &wrong, "a0.tdb");
  auto bad = UnfilterTile(Zstd(), tiles[0], ctx);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kKey);
  EXPECT_NE(bad.error().message().find("a0.tdb"), std::string::npos);
  EXPECT_NE(bad.error().message().find("authentication failed"), std::string::npos);

  ctx.key = nullptr;
  auto none = UnfilterTile(Zstd(), tiles[0], ctx);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), ErrorCode::kKey);

  // Without the implicit encryption filter the bytes are not a ZSTD tile.
  EncryptionKey key = CorpusKey();
  ctx.key = &key;
  ctx.encrypted = false;
  auto plain = UnfilterTile(Zstd(), tiles[0], ctx);
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.error().code(), ErrorCode::kCorrupt);
}

TEST(EncryptedCorpusTest, FlippedCiphertextByteFailsAuthentication) {
  EncryptionKey key = CorpusKey();
  ByteVec file = ReadFileBytes(Fragment() + "/a0.tdb");
  auto tiles = Tiles(file);
  ASSERT_FALSE(tiles.empty());
  ByteVec tile(tiles[0].begin(), tiles[0].end());
  tile.back() ^= 1;
  TileContext ctx = Context(Datatype::kInt32, 4, &key, "a0.tdb");
  auto r = UnfilterTile(Zstd(), tile, ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kKey);
}

}  // namespace
}  // namespace tiledbfs::core::encrypted_test
