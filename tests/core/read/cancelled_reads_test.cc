// Reads once the process is stopping (core/util/stop.h): every tile read,
// alone, in a batch (local and remote paths) or in parts, fails with
// kCancelled without reading, and for every tile asked (no result left
// out); a failed decode is not cached; an index build fails with kCancelled.
// The stop is never cleared, so each case runs in a child process (a death
// test that must exit 0).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/read/tile_cache.h"
#include "core/read/tile_source.h"
#include "core/util/stop.h"
#include "tests/core/read/wrapped_storage.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

const fs::path kSparse = fs::path(TILEDBFS_TEST_DATA) / "corpus" / "arrays" / "sparse_2d";

// Ends the child: 0 if `failure` is empty, else 1 after saying why.
[[noreturn]] void ExitWith(const std::string& failure) {
  if (!failure.empty()) std::fprintf(stderr, "%s\n", failure.c_str());
  std::_Exit(failure.empty() ? 0 : 1);
}

std::string Cancelled(const Error& e) {
  return e.code() == ErrorCode::kCancelled ? "" : "not cancelled: " + e.ToString();
}

// The first failure of the reads of the latest view of sparse_2d, through
// `storage`, once stopped; empty if all are as they must be.
std::string CheckReads(std::shared_ptr<const Storage> storage, const RemoteStorage* remote) {
  auto array = Array::Open(storage, std::nullopt, DefaultLimits());
  if (!array.ok()) return array.error().ToString();
  auto view = (*array)->ViewAt(UINT64_MAX);
  if (!view.ok()) return view.error().ToString();
  std::vector<TileRequest> tiles;
  for (const auto& frag : (*view)->fragments()) {
    for (uint64_t t = 0; t < frag->tile_num(); ++t) {
      tiles.push_back({frag.get(), FieldRef::Attribute(0), t});
      tiles.push_back({frag.get(), FieldRef::Dimension(0), t});
    }
  }
  if (tiles.size() < 4) return "too few tiles";
  const size_t calls = remote != nullptr ? remote->calls() : 0;

  RequestStop();
  std::vector<Result<DecodedTile>> many = ReadTiles(tiles, false);
  if (many.size() != tiles.size()) return "ReadTiles left tiles out";
  for (const auto& r : many) {
    if (r.ok()) return "ReadTiles read a tile after the stop";
    if (auto why = Cancelled(r.error()); !why.empty()) return "ReadTiles: " + why;
  }
  if (remote != nullptr && remote->calls() != calls) return "ReadMany was called after the stop";
  const TileRequest& first = tiles.front();
  auto one = ReadTile(*first.fragment, first.field, first.tile, false);
  if (one.ok()) return "ReadTile read after the stop";
  if (auto why = Cancelled(one.error()); !why.empty()) return "ReadTile: " + why;
  auto part = ReadTilePart(*first.fragment, first.field, first.tile, false, 0, 1);
  if (part.ok()) return "ReadTilePart read after the stop";
  if (auto why = Cancelled(part.error()); !why.empty()) return "ReadTilePart: " + why;

  // A cancelled decode is not cached: the next reader decodes again.
  TileCache cache(uint64_t{64} << 20);
  const TileKey key{first.fragment, 0, first.tile, 0};
  std::shared_ptr<const FragmentMetadata> owner;
  for (const auto& frag : (*view)->fragments()) {
    if (frag.get() == first.fragment) owner = frag;
  }
  int decodes = 0;
  for (int i = 0; i < 2; ++i) {
    auto got = cache.GetOrDecode(
        key,
        [&] {
          ++decodes;
          return ReadTile(*first.fragment, first.field, first.tile, false);
        },
        owner);
    if (got.ok()) return "GetOrDecode gave a tile after the stop";
    if (auto why = Cancelled(got.error()); !why.empty()) return "GetOrDecode: " + why;
  }
  if (decodes != 2) return "a cancelled decode was remembered";
  if (cache.Contains(key) || cache.used_bytes() != 0) return "a cancelled decode was cached";

  // The view's cell index (its coordinate tiles) is not built.
  auto cells = (*view)->CellCount();
  if (cells.ok()) return "the view counted its cells after the stop";
  if (auto why = Cancelled(cells.error()); !why.empty()) return "CellCount: " + why;
  return "";
}

TEST(CancelledReadsTest, LocalReadsFailCancelledAndNothingIsCached) {
  EXPECT_EXIT(
      {
        auto local = LocalStorage::Open(kSparse.string());
        if (!local.ok()) ExitWith(local.error().ToString());
        ExitWith(CheckReads(*local, nullptr));
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(CancelledReadsTest, RemoteReadsFailCancelledWithoutReadMany) {
  EXPECT_EXIT(
      {
        auto local = LocalStorage::Open(kSparse.string());
        if (!local.ok()) ExitWith(local.error().ToString());
        auto remote = std::make_shared<RemoteStorage>(*local, 4);
        ExitWith(CheckReads(remote, remote.get()));
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace tiledbfs::core
