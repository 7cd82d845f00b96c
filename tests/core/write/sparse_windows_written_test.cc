// A sparse view indexed a window of rows at a time (sparse_windows.h) on
// arrays our writer makes bigger than the corpora's: 4 fragments in column
// bands (their tiles interleave in row-major order, and tiles reach from
// one window into the next) and 3 fragments over the same cells (newer
// ones overwrite older ones: the dedup runs inside each window). Every
// field reads as the whole index gives it, windows are cut near the size
// asked for, and a reader going forward releases tiles behind it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "core/array/array_view.h"
#include "core/read/sparse_index.h"
#include "core/read/sparse_windows.h"
#include "core/read/tile_cache.h"
#include "tests/core/write/temp_array.h"

namespace tiledbfs::core {
namespace {

constexpr const char* kSchema = R"({
  "array_type": "sparse", "capacity": 100, "allows_dups": false,
  "dims": [{"name": "r", "type": "INT64", "domain": [-500, 499], "tile_extent": 20},
           {"name": "c", "type": "INT32", "domain": [0, 999], "tile_extent": 100}],
  "attrs": [{"name": "v", "type": "FLOAT64"},
            {"name": "s", "type": "STRING_UTF8", "cell_val_num": 4294967295, "var": true,
             "nullable": true}]})";

Range Band(int64_t lo, int64_t hi, size_t size) {
  Range r;
  r.lo = CopyBytes({reinterpret_cast<const uint8_t*>(&lo), size});
  r.hi = CopyBytes({reinterpret_cast<const uint8_t*>(&hi), size});
  return r;
}

// 4 fragments of 6,000 cells in column bands 250 wide, every row.
void WriteColumnBands(TempArray& array, const ArraySchema& s, uint64_t seed) {
  for (int k = 0; k < 4; ++k) {
    SyntheticSpec spec;
    spec.seed = seed + k;
    spec.cells_min = spec.cells_max = 6000;
    spec.subarray = {Band(-500, 499, 8), Band(250 * k, 250 * k + 249, 4)};
    auto w = WriteSyntheticFragments(array.root().string(), s, 10 + k, spec);
    ASSERT_TRUE(w.ok()) << w.error().ToString();
  }
}

// An array of WriteColumnBands(seed) and its newest view.
struct BandedArray {
  BandedArray(const char* name, uint64_t seed) : array(name) {
    ArraySchema s = array.Create(kSchema);
    WriteColumnBands(array, s, seed);
    view = array.View();
  }
  TempArray array;
  std::shared_ptr<const ArrayView> view;
};

// What a SparseWindows or an index of the view is made from.
ViewInputs InputsOf(const ArrayView& view) {
  ViewInputs in;
  in.schema = &view.schema();
  in.fragments = view.fragments();
  return in;
}

void ExpectSame(const Column& got, const Column& want, const std::string& what) {
  EXPECT_EQ(got.cell_count, want.cell_count) << what;
  EXPECT_TRUE(std::equal(got.data.begin(), got.data.end(), want.data.begin(), want.data.end()))
      << what;
  EXPECT_EQ(got.offsets, want.offsets) << what;
  EXPECT_TRUE(std::equal(got.validity.begin(), got.validity.end(), want.validity.begin(),
                         want.validity.end()))
      << what;
}

// Every field of the view through windows of `window` cells is the whole
// index's, read whole and in pieces of `piece` cells; returns the windows.
size_t CheckWindows(const ArrayView& view, uint64_t window, uint64_t piece) {
  auto whole = view.WithIndexWindow(UINT64_MAX);
  auto windowed = view.WithIndexWindow(window);
  auto windows = windowed->IndexWindows();
  EXPECT_TRUE(windows.ok());
  if (!windows.ok()) return 0;
  auto cells = whole->CellCount();
  EXPECT_TRUE(cells.ok());
  if (!cells.ok()) return 0;
  for (const char* f : {"r", "c", "v", "s"}) {
    auto want = whole->ReadField(f);
    EXPECT_TRUE(want.ok());
    if (!want.ok()) return 0;
    Column got;
    for (uint64_t first = 0; first < *cells; first += piece) {
      auto part = windowed->ReadFieldRange(f, first, std::min(piece, *cells - first));
      EXPECT_TRUE(part.ok()) << part.error().ToString();
      if (!part.ok()) return 0;
      if (first == 0) {
        got = *part;
        continue;
      }
      const uint64_t base = got.data.size();
      AppendBytes(got.data, part->data);
      for (size_t i = 1; i < part->offsets.size(); ++i)
        got.offsets.push_back(base + part->offsets[i]);
      AppendBytes(got.validity, part->validity);
      got.cell_count += part->cell_count;
    }
    ExpectSame(got, *want, std::string(f) + " in pieces of " + std::to_string(piece));
  }
  auto ned = whole->NonEmptyDomain(), got_ned = windowed->NonEmptyDomain();
  EXPECT_TRUE(ned.ok() && got_ned.ok());
  if (ned.ok() && got_ned.ok()) {
    EXPECT_EQ(got_ned->size(), ned->size());
    for (size_t d = 0; d < std::min(ned->size(), got_ned->size()); ++d) {
      EXPECT_EQ((*got_ned)[d].lo, (*ned)[d].lo);
      EXPECT_EQ((*got_ned)[d].hi, (*ned)[d].hi);
    }
  }
  return *windows;
}

TEST(SparseWindowsWrittenTest, ColumnBandsReadAsTheWholeIndex) {
  BandedArray banded("windows_bands", 3);
  auto view = banded.view;
  ASSERT_TRUE(view);
  // 24,000 cells in windows of about 1,000: about 24 windows.
  const size_t windows = CheckWindows(*view, 1000, 777);
  EXPECT_GE(windows, 18u);
  EXPECT_LE(windows, 30u);
  EXPECT_GE(CheckWindows(*view, 5000, 4096), 2u);
  // The build's default window (2 Mi cells) is far more than this array's
  // cells: indexed whole.
  auto none = view->WithIndexWindow(uint64_t{1} << 21)->IndexWindows();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0u);
}

TEST(SparseWindowsWrittenTest, OverwrittenCellsAreDroppedInEachWindow) {
  TempArray array("windows_dedup");
  ArraySchema s = array.Create(kSchema);
  for (int k = 0; k < 3; ++k) {
    SyntheticSpec spec;
    spec.seed = 20 + k;
    spec.cells_min = spec.cells_max = 5000;
    spec.subarray = {Band(-100, 99, 8), Band(0, 99, 4)};
    auto w = WriteSyntheticFragments(array.root().string(), s, 10 + k, spec);
    ASSERT_TRUE(w.ok()) << w.error().ToString();
  }
  auto view = array.View();
  ASSERT_TRUE(view);
  auto cells = view->CellCount();
  ASSERT_TRUE(cells.ok());
  // 15,000 writes of 20,000 cells: many written twice or more.
  EXPECT_LT(*cells, 15000u);
  EXPECT_GE(CheckWindows(*view, 800, 1000), 5u);
  // An older view (the first two fragments) too.
  auto older = array.View(11);
  ASSERT_TRUE(older);
  EXPECT_GE(CheckWindows(*older, 800, 333), 5u);
}

// Where each tile's cells end is that of the whole index (TileEnds), found
// one window at a time.
TEST(SparseWindowsWrittenTest, TilesEndWhereTheWholeIndexSays) {
  BandedArray banded("windows_ends", 60);
  auto view = banded.view;
  ASSERT_TRUE(view);
  // Windows of keys (a window of runs knows each tile's last cell:
  // run_windows_test).
  ViewInputs in = InputsOf(*view);
  in.window_runs = false;
  auto whole = BuildSparseIndex(in);
  ASSERT_TRUE(whole.ok());
  const std::vector<uint64_t> want = TileEnds(in, *whole);
  ASSERT_EQ(want.size(), whole->sparse_tiles.size());
  auto windows = SparseWindows::Make(in, 1000);
  ASSERT_TRUE(windows.ok() && *windows);
  EXPECT_GE((*windows)->windows(), 10u);
  // Nothing is known before a window is counted.
  EXPECT_TRUE((*windows)->TilesEndingIn(0, whole->cell_count).empty());
  auto cells = (*windows)->CellCount();
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(*cells, whole->cell_count);
  std::vector<uint64_t> got(want.size(), UINT64_MAX);
  for (uint64_t i = 0; i < *cells; ++i) {
    for (size_t t : (*windows)->TilesEndingIn(i, i + 1)) {
      ASSERT_LT(t, got.size());
      EXPECT_EQ(got[t], UINT64_MAX) << "tile " << t << " ends twice";
      got[t] = i + 1;
    }
  }
  EXPECT_EQ(got, want);
}

// A reader going forward with windows built ahead of it (in the
// background) finds the cells of windows it builds itself, each window built
// once; windows dropped while a build is under way wait for it.
TEST(SparseWindowsWrittenTest, WindowsBuiltAheadHoldTheSameCells) {
  BandedArray banded("windows_ahead", 70);
  auto view = banded.view;
  ASSERT_TRUE(view);
  const ViewInputs in = InputsOf(*view);
  auto alone = SparseWindows::Make(in, 1000, false);
  auto ahead = SparseWindows::Make(in, 1000, true);
  ASSERT_TRUE(alone.ok() && *alone && ahead.ok() && *ahead);
  ASSERT_EQ((*ahead)->windows(), (*alone)->windows());
  EXPECT_GE((*ahead)->windows(), 10u);
  uint64_t cell = 0;
  for (size_t w = 0; w < (*alone)->windows(); ++w) {
    auto a = (*alone)->Locate(cell);
    auto b = (*ahead)->Locate(cell);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(b->first, a->first);
    EXPECT_EQ(b->index->packed, a->index->packed) << "window " << w;
    cell = a->first + a->index->cell_count;
  }
  EXPECT_EQ((*ahead)->builds(), (*ahead)->windows());
  EXPECT_EQ((*alone)->builds(), (*alone)->windows());
  // A reader at the first window has the second built without asking for
  // it; without building ahead, nothing is.
  auto fresh = SparseWindows::Make(in, 1000, true);
  auto fresh_alone = SparseWindows::Make(in, 1000, false);
  ASSERT_TRUE(fresh.ok() && *fresh && fresh_alone.ok() && *fresh_alone);
  ASSERT_TRUE((*fresh)->Locate(0).ok());
  ASSERT_TRUE((*fresh_alone)->Locate(0).ok());
  (*fresh)->WaitForAhead();
  EXPECT_EQ((*fresh)->builds(), 2u);
  EXPECT_EQ((*fresh_alone)->builds(), 1u);
  for (int k = 0; k < 3; ++k) {
    auto dropped = SparseWindows::Make(in, 1000, true);
    ASSERT_TRUE(dropped.ok() && *dropped);
    auto first = (*dropped)->Locate(0);
    ASSERT_TRUE(first.ok());
    ASSERT_TRUE((*dropped)->Locate(first->index->cell_count).ok());
  }
}

// A window build fills the memory of a window dropped, but never of one a
// reader still holds: a pass holding every window it read gets the same
// cells as a pass holding none, whose builds (all but the first few) reuse
// memory.
TEST(SparseWindowsWrittenTest, WindowsReaderHoldKeepTheirCells) {
  BandedArray banded("windows_reuse", 70);
  auto view = banded.view;
  ASSERT_TRUE(view);
  ViewInputs in = InputsOf(*view);
  in.window_runs = false;  // the memory reused is the keys
  for (bool ahead : {false, true}) {
    SCOPED_TRACE(ahead ? "built ahead" : "built by the reader");
    auto holding = SparseWindows::Make(in, 1000, ahead);
    auto passing = SparseWindows::Make(in, 1000, ahead);
    ASSERT_TRUE(holding.ok() && *holding && passing.ok() && *passing);
    std::vector<SparseWindows::Part> held;
    std::vector<std::vector<uint64_t>> cells;
    uint64_t cell = 0;
    for (size_t w = 0; w < (*holding)->windows(); ++w) {
      auto a = (*holding)->Locate(cell);
      auto b = (*passing)->Locate(cell);
      ASSERT_TRUE(a.ok() && b.ok());
      EXPECT_EQ(a->index->packed, b->index->packed) << "window " << w;
      cells.push_back(b->index->packed);
      held.push_back(*a);
      cell = a->first + a->index->cell_count;
    }
    for (size_t w = 0; w < held.size(); ++w) {
      EXPECT_EQ(held[w].index->packed, cells[w]) << "window " << w;
      EXPECT_EQ(held[w].index->cell_count, cells[w].size());
    }
    EXPECT_EQ((*holding)->reuses(), 0u);
    EXPECT_GE((*passing)->reuses() + 4, (*passing)->windows());
  }
}

// A reader going forward through a windowed view too big for its cache
// releases tiles behind it, and reads the same bytes.
TEST(SparseWindowsWrittenTest, AReaderGoingForwardReleasesTilesBehindIt) {
  BandedArray banded("windows_release", 40);
  auto reference = banded.view;
  ASSERT_TRUE(reference);
  auto want = reference->WithIndexWindow(UINT64_MAX)->ReadField("v");
  ASSERT_TRUE(want.ok());
  // 64 KiB of tiles: less than the view's 192 KB of v.
  auto cache = std::make_shared<TileCache>(64 << 10, 0);
  auto view = banded.array.View(UINT64_MAX, cache)->WithIndexWindow(1000);
  auto cells = view->CellCount();
  ASSERT_TRUE(cells.ok());
  size_t released = 0;
  ByteVec got;
  for (uint64_t first = 0; first < *cells; first += 1000) {
    const uint64_t n = std::min<uint64_t>(1000, *cells - first);
    auto part = view->ReadFieldRange("v", first, n);
    ASSERT_TRUE(part.ok()) << part.error().ToString();
    AppendBytes(got, part->data);
    released += view->ReleaseTiles({"v"}, first, first + n);
  }
  EXPECT_TRUE(std::equal(got.begin(), got.end(), want->data.begin(), want->data.end()));
  EXPECT_GT(released, 10u);
}

// Coordinates too wide to pack with the ordinals of the whole view (40 bits
// of rows, 12 of columns, 15 of ordinals over 240 tiles) pack a window at a
// time: each window holds a narrow band of rows and few tiles. Such a view
// took the generic path, a sorted index of every cell, before.
TEST(SparseWindowsWrittenTest, CoordinatesTooWideForTheWholeViewPackPerWindow) {
  TempArray array("windows_wide");
  ArraySchema s = array.Create(R"({
    "array_type": "sparse", "capacity": 100, "allows_dups": false,
    "dims": [{"name": "r", "type": "INT64", "domain": [0, 1099511627775],
              "tile_extent": 68719476736},
             {"name": "c", "type": "INT32", "domain": [0, 4095], "tile_extent": 4096}],
    "attrs": [{"name": "v", "type": "FLOAT64"},
              {"name": "s", "type": "STRING_UTF8", "cell_val_num": 4294967295, "var": true,
               "nullable": true}]})");
  for (int k = 0; k < 4; ++k) {
    SyntheticSpec spec;
    spec.seed = 90 + k;
    spec.cells_min = spec.cells_max = 6000;
    spec.subarray = {Band(0, 1099511627775, 8), Band(1024 * k, 1024 * k + 1023, 4)};
    auto w = WriteSyntheticFragments(array.root().string(), s, 10 + k, spec);
    ASSERT_TRUE(w.ok()) << w.error().ToString();
  }
  auto view = array.View();
  ASSERT_TRUE(view);
  EXPECT_GE(CheckWindows(*view, 1000, 777), 10u);
}

// The cells of `fields` of a view (read whole) whose coordinates r (INT64)
// and c (INT32) lie in the box, in order.
std::vector<Column> CellsInBox(const ArrayView& view, const std::vector<std::string>& fields,
                               int64_t r0, int64_t r1, int32_t c0, int32_t c1) {
  auto r = view.ReadField("r");
  auto c = view.ReadField("c");
  EXPECT_TRUE(r.ok() && c.ok());
  std::vector<Column> out;
  if (!r.ok() || !c.ok()) return out;
  std::vector<bool> in(r->cell_count);
  for (uint64_t i = 0; i < r->cell_count; ++i) {
    int64_t rv;
    int32_t cv;
    std::memcpy(&rv, r->data.data() + i * 8, 8);
    std::memcpy(&cv, c->data.data() + i * 4, 4);
    in[i] = rv >= r0 && rv <= r1 && cv >= c0 && cv <= c1;
  }
  for (const std::string& f : fields) {
    auto all = view.ReadField(f);
    EXPECT_TRUE(all.ok());
    if (!all.ok()) return {};
    Column kept = *all;
    kept.data.clear();
    kept.offsets.clear();
    kept.validity.clear();
    kept.cell_count = 0;
    if (kept.var()) kept.offsets.push_back(0);
    for (uint64_t i = 0; i < all->cell_count; ++i) {
      if (!in[i]) continue;
      const Bytes v = all->cell(i);
      AppendBytes(kept.data, v);
      if (kept.var()) kept.offsets.push_back(kept.data.size());
      if (!all->validity.empty()) kept.validity.push_back(all->validity[i]);
      ++kept.cell_count;
    }
    out.push_back(std::move(kept));
  }
  return out;
}

// A slice of integer coordinates takes the packed path, whole or a window
// at a time: its cells are the view's cells in the box, in the view's order
// (boxes of rows, of columns, of both, and one that holds no cell).
TEST(SparseWindowsWrittenTest, SlicesHoldTheViewsCellsInTheirBox) {
  BandedArray banded("windows_slices", 5);
  auto view = banded.view;
  ASSERT_TRUE(view);
  const std::vector<std::string> fields = {"r", "c", "v", "s"};
  struct Box {
    int64_t r0, r1;
    int32_t c0, c1;
  };
  const int64_t kRows0 = -500, kRows1 = 499;
  for (const Box& b : {Box{-200, 300, 0, 999}, Box{kRows0, kRows1, 100, 620},
                       Box{-17, 480, 240, 260}, Box{0, 0, 0, 999}, Box{-500, 499, 1000, 1000}}) {
    SCOPED_TRACE(::testing::Message()
                 << "r " << b.r0 << ".." << b.r1 << ", c " << b.c0 << ".." << b.c1);
    Subarray sub(2);
    sub[0] = Band(b.r0, b.r1, 8);
    sub[1] = Band(b.c0, b.c1, 4);
    const std::vector<Column> want = CellsInBox(*view, fields, b.r0, b.r1, b.c0, b.c1);
    ASSERT_EQ(want.size(), fields.size());
    auto sliced = view->WithSubarray(sub);
    for (const uint64_t window : {uint64_t{UINT64_MAX}, uint64_t{500}}) {
      auto v = sliced->WithIndexWindow(window);
      auto cells = v->CellCount();
      ASSERT_TRUE(cells.ok()) << cells.error().ToString();
      EXPECT_EQ(*cells, want[0].cell_count) << "window " << window;
      for (size_t f = 0; f < fields.size(); ++f) {
        auto got = v->ReadField(fields[f]);
        ASSERT_TRUE(got.ok()) << got.error().ToString();
        ExpectSame(*got, want[f], fields[f] + " window " + std::to_string(window));
      }
      auto windows = v->IndexWindows();
      ASSERT_TRUE(windows.ok());
      if (window == 500 && want[0].cell_count > 2000) {
        EXPECT_GE(*windows, 2u);
      }
    }
  }
}

}  // namespace
}  // namespace tiledbfs::core

namespace tiledbfs::core {
namespace {

// Views share one WindowPool: a view no longer read lets its windows go as
// another view's builds need the room, and builds them again if read again
// (the same cells); views of one owner (a diff's slices) never drop one
// another's windows.
TEST(SparseWindowsWrittenTest, ViewsNotReadLetTheirWindowsGoToTheOnesRead) {
  BandedArray banded("windows_pool", 70);
  ASSERT_TRUE(banded.view);
  ViewInputs in = InputsOf(*banded.view);
  in.window_pool = std::make_shared<WindowPool>(0);
  // Every window of `w` in order, each let go once read.
  struct Pass {
    std::vector<std::weak_ptr<const CellIndex>> seen;
    std::vector<std::vector<uint64_t>> cells;
    std::vector<uint64_t> firsts;
  };
  auto pass = [](const SparseWindows& w) {
    Pass out;
    uint64_t cell = 0;
    for (size_t k = 0; k < w.windows(); ++k) {
      auto p = w.Locate(cell);
      EXPECT_TRUE(p.ok());
      if (!p.ok()) break;
      out.seen.push_back(p->index);
      out.cells.push_back(p->index->packed);
      out.firsts.push_back(p->first);
      cell = p->first + p->index->cell_count;
    }
    return out;
  };
  auto a = SparseWindows::Make(in, 1000, false);
  auto b = SparseWindows::Make(in, 1000, false);
  ASSERT_TRUE(a.ok() && *a && b.ok() && *b);
  ASSERT_GE((*a)->windows(), 10u);
  const Pass pa = pass(**a);
  // The last kKept windows of a stay while nothing else is read.
  EXPECT_FALSE(pa.seen.back().expired());
  EXPECT_TRUE(pa.seen.front().expired());
  const Pass pb = pass(**b);
  EXPECT_EQ(pb.cells, pa.cells);
  for (const auto& w : pa.seen) EXPECT_TRUE(w.expired());
  EXPECT_FALSE(pb.seen.back().expired());
  const uint64_t built = (*a)->builds();
  auto again = (*a)->Locate(pa.firsts.back());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*a)->builds(), built + 1);
  EXPECT_EQ(again->index->packed, pa.cells.back());

  // One owner for both: reading b leaves a's windows be.
  int diff = 0;
  in.window_owner = &diff;
  auto c = SparseWindows::Make(in, 1000, false);
  auto d = SparseWindows::Make(in, 1000, false);
  ASSERT_TRUE(c.ok() && *c && d.ok() && *d);
  const Pass pc = pass(**c);
  pass(**d);
  EXPECT_FALSE(pc.seen.back().expired());
  const uint64_t built_c = (*c)->builds();
  ASSERT_TRUE((*c)->Locate(pc.firsts.back()).ok());
  EXPECT_EQ((*c)->builds(), built_c);
}

void CheckSubWindows(const ArrayView& view, bool runs) {
  ViewInputs in = InputsOf(view);
  in.window_runs = runs;
  auto whole = BuildSparseIndex(in);
  ASSERT_TRUE(whole.ok());
  auto counted = SparseWindows::Make(in, 1000, false);
  ASSERT_TRUE(counted.ok() && *counted);
  ASSERT_GE((*counted)->windows(), 10u);
  ASSERT_TRUE((*counted)->CellCount().ok());
  const std::string saved = (*counted)->SaveCounts();
  ASSERT_FALSE(saved.empty());
  auto fresh = [&](const std::string& counts) {
    auto w = SparseWindows::Make(in, 1000, false);
    EXPECT_TRUE(w.ok() && *w);
    EXPECT_TRUE((*w)->RestoreCounts(counts).ok());
    return std::move(*w);
  };
  auto expect_whole_cells = [&](const SparseWindows::Part& p) {
    for (uint64_t i = 0; i < p.index->cell_count; ++i) {
      const CellRef got = p.index->At(i), want = whole->At(p.first + i);
      ASSERT_TRUE(got.fragment == want.fragment && got.tile == want.tile && got.pos == want.pos)
          << "view cell " << p.first + i;
    }
  };
  const uint64_t cells = whole->cell_count;

  auto tail = fresh(saved);
  auto last = tail->Locate(cells - 1);
  ASSERT_TRUE(last.ok()) << last.error().ToString();
  EXPECT_EQ(tail->builds(), 0u);
  EXPECT_EQ(tail->sub_builds(), 1u);
  EXPECT_EQ(last->first + last->index->cell_count, cells);
  EXPECT_LE(last->index->cell_count, 2000u / SparseWindows::kSubs) << "about a sixteenth";
  EXPECT_EQ(!last->index->runs.empty(), runs) << "built as the windows are";
  expect_whole_cells(*last);

  // From the middle of window 4 to the end of window 7, one cell at a time.
  auto on = fresh(saved);
  uint64_t cell = 0;
  for (int w = 0; w < 4; ++w) {
    auto p = (*counted)->Locate(cell);
    ASSERT_TRUE(p.ok());
    cell = p->first + p->index->cell_count;
  }
  auto window4 = (*counted)->Locate(cell);
  ASSERT_TRUE(window4.ok());
  uint64_t end = cell;
  for (int w = 4; w < 8; ++w) {
    auto p = (*counted)->Locate(end);
    ASSERT_TRUE(p.ok());
    end = p->first + p->index->cell_count;
  }
  for (uint64_t c = cell + window4->index->cell_count / 2; c < end;) {
    auto p = on->Locate(c);
    ASSERT_TRUE(p.ok()) << p.error().ToString();
    ASSERT_LE(p->first, c);
    expect_whole_cells(*p);
    c = p->first + p->index->cell_count;
  }
  EXPECT_GE(on->sub_builds(), SparseWindows::kSubs / 4) << "the rest of window 4, a sub at a time";
  EXPECT_EQ(on->builds(), 3u) << "windows 5, 6 and 7 whole";

  // The last sub-window's first cell one too early.
  std::string wrong = saved;
  uint64_t first;
  std::memcpy(&first, wrong.data() + wrong.size() - 8, 8);
  --first;
  std::memcpy(wrong.data() + wrong.size() - 8, &first, 8);
  auto lying = SparseWindows::Make(in, 1000, false);
  ASSERT_TRUE(lying.ok() && *lying);
  ASSERT_TRUE((*lying)->RestoreCounts(wrong).ok());
  auto bad = (*lying)->Locate(cells - 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(bad.error().message().find("sub-window"), std::string::npos) << bad.error().message();
}

// Counts kept across mounts (SaveCounts) hold where each window's
// sub-windows start: a read jumping into a window (a `tail`) builds only
// the sub-window of its cell, a reader going on builds the next ones,
// then whole windows from the next window on. Every cell is the whole
// index's. A sub-window whose kept count is wrong is kCorrupt, never
// other cells.
TEST(SparseWindowsWrittenTest, AJumpBuildsOnlyTheSubWindowOfItsCell) {
  BandedArray banded("windows_subs", 80);
  ASSERT_TRUE(banded.view);
  // Windows of packed keys, then of runs (the bands' cells are runs).
  for (bool runs : {false, true}) {
    SCOPED_TRACE(runs ? "runs" : "keys");
    CheckSubWindows(*banded.view, runs);
  }
}

}  // namespace
}  // namespace tiledbfs::core
