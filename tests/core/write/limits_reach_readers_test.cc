// One Limits given to Array::Open reaches every reader below it: the
// listing (max_files), fragment metadata's sections and the data tiles
// (max_metadata_bytes, max_tile_bytes). Each case reads, under the default
// limits, what the cap then refuses, in an array written here. S3
// listings: tests/core/storage/open/open_storage_test.cc.
#include <gtest/gtest.h>

#include <string>

#include "core/read/tile_source.h"
#include "tests/core/write/temp_array.h"

namespace tiledbfs::core {
namespace {

// Dense int32 cells 1..65536 in tiles of `extent`, written at T = 10.
void WriteDense(TempArray& a, int extent, uint64_t fragments = 1) {
  ArraySchema s = a.Create(R"({"array_type": "dense",
      "dims": [{"name": "d", "type": "INT32", "domain": [1, 65536], "tile_extent": )" +
                           std::to_string(extent) + R"(}],
      "attrs": [{"name": "a", "type": "INT32"}]})");
  SyntheticSpec spec;
  spec.fragments = fragments;
  auto w = WriteSyntheticFragments(a.root().string(), s, 10, spec);
  ASSERT_TRUE(w.ok()) << w.error().ToString();
}

// Opens the array under `limits` and decodes tile 0 of attribute a of its
// first fragment.
Result<DecodedTile> FirstTile(const TempArray& a, const Limits& limits) {
  ASSIGN_OR_RETURN(auto storage, LocalStorage::Open(a.root().string()));
  ASSIGN_OR_RETURN(auto array, Array::Open(storage, std::nullopt, limits));
  ASSIGN_OR_RETURN(auto view, array->ViewAt(UINT64_MAX));
  if (view->fragments().empty()) return Error::NotFound("no fragment");
  return ReadTile(*view->fragments()[0], FieldRef::Attribute(0), 0, false);
}

void ExpectOverLimit(const Result<DecodedTile>& r, const std::string& where) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kOutOfMemory) << r.error().ToString();
  EXPECT_NE(r.error().ToString().find(where), std::string::npos) << r.error().ToString();
}

// A 256 KiB data tile under a 64 KiB max_tile_bytes; the schema and the
// fragment's metadata, far smaller, still load.
TEST(LimitsReachReaders, DataTiles) {
  TempArray a("limits");
  WriteDense(a, 65536);
  auto whole = FirstTile(a, DefaultLimits());
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  EXPECT_EQ(whole->fixed.size(), 65536u * 4);
  Limits small;
  small.max_tile_bytes = 64 << 10;
  ExpectOverLimit(FirstTile(a, small), "a0.tdb");
}

// 16384 tiles: their offsets (128 KiB, a section of the fragment's
// metadata) over a 64 KiB max_metadata_bytes.
TEST(LimitsReachReaders, FragmentMetadata) {
  TempArray a("limits");
  WriteDense(a, 4);
  ASSERT_TRUE(FirstTile(a, DefaultLimits()).ok());
  Limits small;
  small.max_metadata_bytes = 64 << 10;
  ExpectOverLimit(FirstTile(a, small), "__fragment_metadata.tdb");
}

// Four fragments (and their four commit files) over max_files 3: the
// array's folder, of three entries, is listed whole.
TEST(LimitsReachReaders, Listing) {
  TempArray a("limits");
  WriteDense(a, 65536, 4);
  ASSERT_TRUE(FirstTile(a, DefaultLimits()).ok());
  Limits small;
  small.max_files = 3;
  ExpectOverLimit(FirstTile(a, small), "4 entries, more than the limit of 3");
}

}  // namespace
}  // namespace tiledbfs::core
