#include "core/tile/generic_tile.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/core/filters/test_util.h"

namespace tiledbfs::core::generic_tile_test {
namespace {

using testing::CorpusPath;
using testing::ReadFileBytes;

// Every generic tile TileDB wrote for the corpus: schemas, enumerations,
// array and group metadata.
std::vector<std::string> CorpusGenericTiles() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(CorpusPath("arrays"))) {
    if (!e.is_regular_file()) continue;
    std::string p = e.path().string();
    std::string parent = e.path().parent_path().filename().string();
    if (parent == "__schema" || parent == "__enumerations" || parent == "__meta") {
      out.push_back(p);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

EncryptionKey CorpusKey() {
  ByteVec hex = ReadFileBytes(CorpusPath("arrays/encrypted.key"));
  return testing::KeyFromHex(std::string(hex.begin(), hex.end()));
}

bool IsEncryptedArray(const std::string& path) {
  return path.find("/arrays/encrypted/") != std::string::npos;
}

TEST(GenericTileTest, EveryCorpusGenericTileDecodesToItsTileSize) {
  auto files = CorpusGenericTiles();
  ASSERT_GT(files.size(), 20u);
  EncryptionKey key = CorpusKey();
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    ByteVec bytes = ReadFileBytes(path);
    ByteReader r(bytes);
    auto h = ParseGenericTileHeader(r, DefaultLimits());
    ASSERT_TRUE(h.ok()) << h.error().ToString();
    EXPECT_EQ(h->header_size, kGenericTileFixedHeaderSize + h->filter_pipeline_size);
    EXPECT_EQ(h->encryption_type, IsEncryptedArray(path) ? 1 : 0);
    auto t =
        DecodeGenericTile(bytes, path, 0, IsEncryptedArray(path) ? &key : nullptr, DefaultLimits());
    ASSERT_TRUE(t.ok()) << t.error().ToString();
    EXPECT_EQ(t->data.size(), h->tile_size);
    // Metadata files hold one generic tile each, schemas too.
    EXPECT_EQ(t->disk_size, bytes.size());
  }
}

TEST(GenericTileTest, ReadGenericTileThroughStorage) {
  auto storage = LocalStorage::Open(CorpusPath("arrays/filters"));
  ASSERT_TRUE(storage.ok());
  auto list = (*storage)->List("__schema");
  ASSERT_TRUE(list.ok());
  std::string path = "__schema/" + list->at(0).name;
  auto t = ReadGenericTile(**storage, path, 0, nullptr, DefaultLimits());
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  EXPECT_EQ(t->disk_size, list->at(0).size);
  // The schema starts with its own version number.
  uint32_t version;
  std::memcpy(&version, t->data.data(), 4);
  EXPECT_EQ(version, 22u);

  auto past = ReadGenericTile(**storage, path, list->at(0).size - 3, nullptr, DefaultLimits());
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(past.error().message().find("truncated"), std::string::npos);
}

std::string EncryptedSchemaPath() {
  auto dir = CorpusPath("arrays/encrypted/__schema");
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file()) return e.path().string();
  }
  return dir;
}

TEST(GenericTileTest, EncryptedTileNeedsTheRightKey) {
  ByteVec bytes = ReadFileBytes(EncryptedSchemaPath());
  auto none = DecodeGenericTile(bytes, "__schema/x", 0, nullptr, DefaultLimits());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), ErrorCode::kKey);
  EXPECT_NE(none.error().message().find("__schema/x"), std::string::npos);

  EncryptionKey wrong = CorpusKey();
  wrong.bytes[0] ^= 1;
  auto bad = DecodeGenericTile(bytes, "__schema/x", 0, &wrong, DefaultLimits());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kKey);
  EXPECT_NE(bad.error().message().find("authentication failed"), std::string::npos);
  EXPECT_NE(bad.error().message().find("__schema/x"), std::string::npos);

  EncryptionKey key = CorpusKey();
  auto good = DecodeGenericTile(bytes, "__schema/x", 0, &key, DefaultLimits());
  ASSERT_TRUE(good.ok()) << good.error().ToString();
}

TEST(GenericTileTest, EveryTruncationPrefixIsRejected) {
  EncryptionKey key = CorpusKey();
  for (std::string path :
       {CorpusPath("arrays/dense_1d/__schema/") +
            std::filesystem::directory_iterator(CorpusPath("arrays/dense_1d/__schema"))
                ->path()
                .filename()
                .string(),
        EncryptedSchemaPath()}) {
    SCOPED_TRACE(path);
    ByteVec bytes = ReadFileBytes(path);
    for (size_t n = 0; n < bytes.size(); ++n) {
      auto t = DecodeGenericTile(Bytes(bytes.data(), n), "f", 0, &key, DefaultLimits());
      ASSERT_FALSE(t.ok()) << n;
      EXPECT_EQ(t.error().code(), ErrorCode::kCorrupt) << n << ": " << t.error().ToString();
    }
  }
}

ByteVec Dense1dSchema() {
  for (const auto& e :
       std::filesystem::directory_iterator(CorpusPath("arrays/dense_1d/__schema"))) {
    return ReadFileBytes(e.path().string());
  }
  return {};
}

TEST(GenericTileTest, BadFieldsAreNamed) {
  ByteVec good = Dense1dSchema();
  {
    ByteVec b = good;
    b[20] = 200;  // datatype
    auto t = DecodeGenericTile(b, "f", 0, nullptr, DefaultLimits());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(t.error().message().find("datatype"), std::string::npos);
  }
  {
    ByteVec b = good;
    b[29] = 7;  // encryption type
    auto t = DecodeGenericTile(b, "f", 0, nullptr, DefaultLimits());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().code(), ErrorCode::kUnsupported);
    EXPECT_NE(t.error().message().find("encryption type 7"), std::string::npos);
  }
  {
    ByteVec b = good;
    b[29] = 1;  // says encrypted, but the pipeline has no encryption filter
    auto t = DecodeGenericTile(b, "f", 0, nullptr, DefaultLimits());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().code(), ErrorCode::kCorrupt);
  }
  {
    ByteVec b = good;
    b[0] = 24;  // version
    auto t = DecodeGenericTile(b, "f", 0, nullptr, DefaultLimits());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().code(), ErrorCode::kUnsupported);
    EXPECT_NE(t.error().message().find("format version 24"), std::string::npos);
  }
  {
    ByteVec b = good;
    b[42] = 99;  // the first filter's type byte (pipeline at 34: 4 + 4 bytes)
    auto t = DecodeGenericTile(b, "f", 0, nullptr, DefaultLimits());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().code(), ErrorCode::kUnsupported);
    EXPECT_NE(t.error().message().find("unknown filter type 99"), std::string::npos);
  }
}

TEST(GenericTileTest, OversizedLengthsAllocateNothing) {
  ByteVec good = Dense1dSchema();
  {
    ByteVec b = good;
    uint64_t huge = uint64_t{1} << 40;
    std::memcpy(b.data() + 12, &huge, 8);  // tile size
    auto t = DecodeGenericTile(b, "f", 0, nullptr, DefaultLimits());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().code(), ErrorCode::kOutOfMemory);
  }
  {
    ByteVec b = good;
    uint64_t huge = ~uint64_t{0};
    std::memcpy(b.data() + 4, &huge, 8);  // persisted size
    auto t = DecodeGenericTile(b, "f", 0, nullptr, DefaultLimits());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().code(), ErrorCode::kCorrupt);
  }
  {
    // A tile size that disagrees with the chunks.
    ByteVec b = good;
    uint64_t size;
    std::memcpy(&size, b.data() + 12, 8);
    size += 1;
    std::memcpy(b.data() + 12, &size, 8);
    auto t = DecodeGenericTile(b, "f", 0, nullptr, DefaultLimits());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(t.error().message().find("expected"), std::string::npos);
  }
  {
    // The chunk claims 4 GiB - 1 original bytes: refused before decoding.
    ByteVec b = good;
    uint32_t pipeline_size;
    std::memcpy(&pipeline_size, b.data() + 30, 4);
    size_t chunk = 34 + pipeline_size + 8;
    uint32_t huge = 0xffffffffu;
    std::memcpy(b.data() + chunk, &huge, 4);
    auto t = DecodeGenericTile(b, "f", 0, nullptr, DefaultLimits());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().code(), ErrorCode::kCorrupt);
  }
}

}  // namespace
}  // namespace tiledbfs::core::generic_tile_test
