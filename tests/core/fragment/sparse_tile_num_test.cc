// The footer's sparse tile count is checked against the coordinate file size
// it comes with (a stored tile takes at least its 8-byte chunk count), so an
// impossible count is corrupt where it is read instead of sizing anything.
// Found by tests/reliability/fault_injection_test.py: one flipped byte in
// commits_consolidated's t6 footer made the tile count 2^54 + 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "tests/core/fragment/fragment_test_util.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;
using namespace fragment_testing;

struct Footer {
  ByteVec bytes;  // the footer with its length field
  uint64_t offset = 0;
  std::shared_ptr<const ArraySchema> schema;
  std::string fragment;
  size_t tile_num_at = 0;  // offset of sparse_tile_num in `bytes`
};

// The last fragment (by name) of a corpus array, with the position of its
// sparse tile count found by value (it is followed by the last tile's cells).
Footer ReadFooter(const std::string& array) {
  Footer f;
  const std::string dir = CorpusDir() + "/arrays/" + array;
  auto storage = LocalStorage::Open(dir);
  EXPECT_TRUE(storage.ok());
  std::vector<std::string> frags;
  for (const auto& e : fs::directory_iterator(dir + "/__fragments")) {
    frags.push_back(e.path().filename().string());
  }
  std::sort(frags.begin(), frags.end());
  f.fragment = frags.back();
  std::string schema;
  for (const auto& e : fs::directory_iterator(dir + "/__schema")) {
    if (e.is_regular_file()) schema = e.path().filename().string();
  }
  auto s = LoadArraySchema(**storage, "__schema/" + schema, nullptr, DefaultLimits());
  EXPECT_TRUE(s.ok());
  ArraySchema named = *s;
  named.name = schema;
  f.schema = std::make_shared<const ArraySchema>(std::move(named));
  ByteVec file = *(*storage)->ReadAll("__fragments/" + f.fragment + "/__fragment_metadata.tdb");
  uint64_t length;
  std::memcpy(&length, file.data() + file.size() - 8, 8);
  f.offset = file.size() - 8 - length;
  f.bytes.assign(file.begin() + f.offset, file.end());
  auto parsed = ParseFragmentFooter(f.bytes, f.offset, *f.schema, 22);
  EXPECT_TRUE(parsed.ok());
  ByteWriter pair;
  pair.Put<uint64_t>(parsed->sparse_tile_num).Put<uint64_t>(parsed->last_tile_cell_num);
  auto it = std::search(f.bytes.begin(), f.bytes.end(), pair.bytes().begin(), pair.bytes().end());
  EXPECT_NE(it, f.bytes.end());
  f.tile_num_at = static_cast<size_t>(it - f.bytes.begin());
  return f;
}

Result<FragmentFooter> WithTileNum(const Footer& f, uint64_t tile_num) {
  ByteVec bytes = f.bytes;
  std::memcpy(bytes.data() + f.tile_num_at, &tile_num, 8);
  return ParseFragmentFooter(bytes, f.offset, *f.schema, 22);
}

// Index of the first fixed-size dimension's file in the footer arrays.
uint64_t FirstFixedDimFileSize(const Footer& f) {
  auto parsed = ParseFragmentFooter(f.bytes, f.offset, *f.schema, 22);
  for (uint32_t d = 0; d < f.schema->dimensions.size(); ++d) {
    if (f.schema->dimensions[d].var()) continue;
    int k = FooterFieldIndex(*f.schema, 22, parsed->has_timestamps, parsed->has_delete_meta,
                             FieldRef::Dimension(d));
    return parsed->file_sizes[static_cast<size_t>(k)];
  }
  return 0;
}

TEST(SparseTileNum, RealCountsParseAndTheBoundIsExact) {
  // sparse_2d: fixed dimensions; sparse_strdim: dimension 0 var-sized, so
  // dimension 1's file bounds the count.
  for (const char* array : {"sparse_2d", "sparse_strdim", "commits_consolidated"}) {
    Footer f = ReadFooter(array);
    auto real = ParseFragmentFooter(f.bytes, f.offset, *f.schema, 22);
    ASSERT_TRUE(real.ok()) << array << ": " << real.error().ToString();
    EXPECT_GT(real->sparse_tile_num, 0u);
    const uint64_t size = FirstFixedDimFileSize(f);
    ASSERT_GT(size, 0u) << array;
    EXPECT_TRUE(WithTileNum(f, size / 8).ok()) << array;
    auto over = WithTileNum(f, size / 8 + 1);
    ASSERT_FALSE(over.ok()) << array;
    EXPECT_EQ(over.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(over.error().message().find("sparse tile num"), std::string::npos)
        << over.error().message();
    EXPECT_NE(over.error().message().find(std::to_string(size) + " bytes"), std::string::npos)
        << over.error().message();
  }
}

TEST(SparseTileNum, HugeCountIsCorruptAndAllocatesNothing) {
  Footer f = ReadFooter("sparse_2d");
  for (uint64_t n : {(uint64_t{1} << 54) + 2, ~uint64_t{0}, uint64_t{1} << 32}) {
    auto r = WithTileNum(f, n);
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(r.error().message().find(std::to_string(n) + " tiles cannot fit"), std::string::npos)
        << r.error().message();
  }
}

TEST(SparseTileNum, LoadOfTheFlippedCorpusFooterIsCorrupt) {
  // commits_consolidated, fragment t6: byte 3650 of __fragment_metadata.tdb
  // XOR 0x40 (the tile count's byte 6) as the fault injection test found it.
  const std::string array = CorpusDir() + "/arrays/commits_consolidated";
  auto local = LocalStorage::Open(array);
  ASSERT_TRUE(local.ok());
  const std::string frag = "__1700000006000_1700000006000_0d6131dd4807ed6ba955d45c395bcbc4_22";
  const std::string dir = "__fragments/" + frag;
  const std::string meta = dir + "/__fragment_metadata.tdb";
  ByteVec file = *(*local)->ReadAll(meta);
  ASSERT_GT(file.size(), 3650u);
  Footer f = ReadFooter("commits_consolidated");
  ASSERT_EQ(f.fragment, frag);
  ASSERT_EQ(f.offset + f.tile_num_at + 6, 3650u);  // the flipped byte is in the count
  file[3650] ^= 0x40;
  auto storage = std::make_shared<MemoryStorage>();
  storage->Put(meta, file);
  SchemaMap schemas{{f.schema->name, f.schema}};
  auto m =
      FragmentMetadata::Load(storage, dir, ParsedName(frag), schemas, nullptr, DefaultLimits());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(m.error().message().find("sparse tile num"), std::string::npos) << m.error().message();
  EXPECT_NE(m.error().message().find("__fragment_metadata.tdb"), std::string::npos)
      << m.error().message();
}

}  // namespace
}  // namespace tiledbfs::core
