// ReadTiles (many tiles, their small files read together through
// Storage::ReadMany) against ReadTile one tile at a time: every tile of
// every field of every fragment of the corpus arrays, and the same errors
// when tile files are lost or cut short; the same through a storage that
// prefers parallel reads (ReadTiles' remote path, RemoteStorage).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/read/tile_source.h"
#include "core/storage/uring_reader.h"
#include "tests/core/read/corpus_key.h"
#include "tests/core/read/wrapped_storage.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

const fs::path kArrays = fs::path(TILEDBFS_TEST_DATA) / "corpus" / "arrays";

// Every tile of every stored field of every fragment of the latest view.
std::vector<TileRequest> AllTiles(const ArrayView& view) {
  std::vector<TileRequest> out;
  for (const auto& frag : view.fragments()) {
    std::vector<FieldRef> fields;
    for (uint32_t a = 0; a < frag->schema().attributes.size(); ++a) {
      fields.push_back(FieldRef::Attribute(a));
    }
    for (uint32_t d = 0; d < frag->schema().dimensions.size(); ++d) {
      fields.push_back(FieldRef::Dimension(d));
    }
    fields.push_back(FieldRef::Coords());
    fields.push_back(FieldRef::Timestamps());
    for (const FieldRef& f : fields) {
      if (frag->FieldIndex(f) < 0) continue;
      for (uint64_t t = 0; t < frag->tile_num(); ++t) out.push_back({frag.get(), f, t});
    }
    // One past the last tile: an error either way.
    out.push_back({frag.get(), FieldRef::Attribute(0), frag->tile_num()});
  }
  return out;
}

void ExpectSame(const std::vector<TileRequest>& tiles, bool encrypted, const std::string& what,
                size_t* errors = nullptr) {
  std::vector<Result<DecodedTile>> many = ReadTiles(tiles, encrypted);
  ASSERT_EQ(many.size(), tiles.size());
  for (size_t i = 0; i < tiles.size(); ++i) {
    Result<DecodedTile> one =
        ReadTile(*tiles[i].fragment, tiles[i].field, tiles[i].tile, encrypted);
    SCOPED_TRACE(what + " " + tiles[i].fragment->dir() + " tile " + std::to_string(tiles[i].tile));
    ASSERT_EQ(many[i].ok(), one.ok()) << (one.ok() ? many[i].error() : one.error()).ToString();
    if (!one.ok()) {
      EXPECT_EQ(many[i].error().code(), one.error().code());
      EXPECT_EQ(many[i].error().message(), one.error().message());
      if (errors != nullptr) ++*errors;
      continue;
    }
    EXPECT_EQ(many[i]->cell_num, one->cell_num);
    EXPECT_EQ(many[i]->cell_size, one->cell_size);
    EXPECT_EQ(many[i]->fixed, one->fixed);
    EXPECT_EQ(many[i]->offsets, one->offsets);
    EXPECT_EQ(many[i]->var, one->var);
    EXPECT_EQ(many[i]->validity, one->validity);
    // The end offset has its own room: the tile cache counts capacities.
    EXPECT_EQ(many[i]->offsets.capacity(), many[i]->offsets.size());
    EXPECT_EQ(one->offsets.capacity(), one->offsets.size());
  }
}

TEST(ReadTilesTest, EveryCorpusTileAsReadTileGivesIt) {
  size_t arrays = 0, tiles = 0, batched = 0;
  for (const auto& e : fs::directory_iterator(kArrays)) {
    if (!e.is_directory() || e.path().filename() == "group") continue;
    auto storage = LocalStorage::Open(e.path().string());
    ASSERT_TRUE(storage.ok()) << storage.error().ToString();
    auto array = Array::Open(*storage, CorpusKeyFor(e.path()), DefaultLimits());
    ASSERT_TRUE(array.ok()) << e.path() << ": " << array.error().ToString();
    auto view = (*array)->ViewAt(UINT64_MAX);
    ASSERT_TRUE(view.ok()) << e.path() << ": " << view.error().ToString();
    std::vector<TileRequest> all = AllTiles(**view);
    ExpectSame(all, CorpusKeyFor(e.path()).has_value(), e.path().filename());
    batched += (*storage)->batched_reads();
    ++arrays;
    tiles += all.size();
  }
  EXPECT_GE(arrays, 20u);
  EXPECT_GT(tiles, 200u);
  // Where the kernel has io_uring, the small files went through it.
  if (UringReader::Create() != nullptr) {
    EXPECT_GT(batched, 100u);
  }
}

// What tiledbfs -o stats logs: each decode counted under its field's name.
TEST(ReadTilesTest, DecodesAreCountedByFieldName) {
  auto storage = LocalStorage::Open((kArrays / "sparse_2d").string());
  ASSERT_TRUE(storage.ok()) << storage.error().ToString();
  auto array = Array::Open(*storage, std::nullopt, DefaultLimits());
  ASSERT_TRUE(array.ok()) << array.error().ToString();
  auto view = (*array)->ViewAt(UINT64_MAX);
  ASSERT_TRUE(view.ok()) << view.error().ToString();
  const FragmentMetadata& frag = *(*view)->fragments().front();
  const ArraySchema& schema = frag.schema();
  const std::string attr = schema.attributes.at(0).name, dim = schema.dimensions.at(1).name;
  const DecodeStats before = TileDecodeStats();
  ASSERT_TRUE(ReadTile(frag, FieldRef::Attribute(0), 0, false).ok());
  ASSERT_TRUE(ReadTile(frag, FieldRef::Attribute(0), 0, false).ok());
  ASSERT_TRUE(ReadTile(frag, FieldRef::Dimension(1), 0, false).ok());
  DecodeStats after = TileDecodeStats();
  EXPECT_EQ(after.tiles - before.tiles, 3u);
  auto count = [](const DecodeStats& s, const std::string& name) {
    auto it = s.by_field.find(name);
    return it == s.by_field.end() ? uint64_t{0} : it->second;
  };
  EXPECT_EQ(count(after, attr) - count(before, attr), 2u);
  EXPECT_EQ(count(after, dim) - count(before, dim), 1u);
  const std::string line = DescribeDecodes(after);
  EXPECT_NE(line.find(fmt::format("{} {}", attr, count(after, attr))), std::string::npos) << line;
}

TEST(ReadTilesTest, EveryCorpusTileReadRemotelyAsReadTileGivesIt) {
  size_t arrays = 0, remote = 0;
  for (const auto& e : fs::directory_iterator(kArrays)) {
    if (!e.is_directory() || e.path().filename() == "group") continue;
    auto local = LocalStorage::Open(e.path().string());
    ASSERT_TRUE(local.ok()) << local.error().ToString();
    auto storage = std::make_shared<RemoteStorage>(*local, 4);
    auto array = Array::Open(storage, CorpusKeyFor(e.path()), DefaultLimits());
    ASSERT_TRUE(array.ok()) << e.path() << ": " << array.error().ToString();
    auto view = (*array)->ViewAt(UINT64_MAX);
    ASSERT_TRUE(view.ok()) << e.path() << ": " << view.error().ToString();
    const size_t before = storage->calls();
    ExpectSame(AllTiles(**view), CorpusKeyFor(e.path()).has_value(), e.path().filename());
    if (storage->calls() > before) ++remote;
    ++arrays;
  }
  EXPECT_GE(arrays, 20u);
  EXPECT_GE(remote, arrays - 2) << "arrays whose tiles went through ReadMany";
}

TEST(ReadTilesTest, LostAndCutTileFilesGiveReadTilesErrors) {
  const fs::path dir =
      fs::temp_directory_path() / ("tiledbfs_read_tiles_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(kArrays / "sparse_2d", dir, fs::copy_options::recursive);
  std::vector<fs::path> fragments;
  for (const auto& f : fs::directory_iterator(dir / "__fragments")) fragments.push_back(f.path());
  std::sort(fragments.begin(), fragments.end());
  ASSERT_GE(fragments.size(), 2u);
  auto storage = LocalStorage::Open(dir.string());
  ASSERT_TRUE(storage.ok());
  auto array = Array::Open(*storage, std::nullopt, DefaultLimits());
  ASSERT_TRUE(array.ok()) << array.error().ToString();
  auto view = (*array)->ViewAt(UINT64_MAX);
  ASSERT_TRUE(view.ok());
  std::vector<TileRequest> all = AllTiles(**view);
  // The footers are loaded: now lose one fragment's first attribute file
  // and cut every tile file of another short.
  fs::remove(fragments[0] / "a0.tdb");
  for (const auto& f : fs::directory_iterator(fragments[1])) {
    if (f.path().extension() == ".tdb" && f.path().filename() != "__fragment_metadata.tdb") {
      fs::resize_file(f.path(), fs::file_size(f.path()) / 2);
    }
  }
  size_t errors = 0;
  ExpectSame(all, false, "damaged sparse_2d", &errors);
  EXPECT_GT(errors, 2u);
  // The same through the remote path (the footers are loaded already).
  auto remote = std::make_shared<RemoteStorage>(*storage, 4);
  auto again = Array::Open(remote, std::nullopt, DefaultLimits());
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  auto remote_view = (*again)->ViewAt(UINT64_MAX);
  ASSERT_TRUE(remote_view.ok()) << remote_view.error().ToString();
  size_t remote_errors = 0;
  ExpectSame(AllTiles(**remote_view), false, "damaged sparse_2d, remote", &remote_errors);
  EXPECT_GT(remote_errors, 2u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tiledbfs::core
