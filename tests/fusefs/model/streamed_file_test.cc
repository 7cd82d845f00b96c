// The layout of streamed files, with renderers made by hand: header, pieces
// and trailer; pieces rendered once and released behind a sequential
// reader; errors confined to their piece; layouts found lazily; layout
// passes shared and counted. Streamed files of real arrays against their
// whole rendering are in streamed_file_corpus_test.cc.
#include "fusefs/model/streamed_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "fusefs/model/array_tree.h"
#include "tests/fusefs/model/read_file.h"

namespace tiledbfs::fusefs::streamed_file_test {
namespace {

namespace fs = std::filesystem;
const fs::path kCorpus = fs::path(TILEDBFS_TEST_DATA) / "corpus" / "arrays";

// A layout by hand: header, pieces (one empty) and trailer, read every way.
class FixedRenderer final : public CellRenderer {
 public:
  core::Status Render(uint64_t first, uint64_t count, std::string& out,
                      core::ReadState*) const override {
    for (uint64_t i = first; i < first + count; ++i) {
      if (i % 5 != 3) out += std::to_string(i * i) + ";";  // cell 3, 8, ...: nothing
    }
    return core::Ok();
  }
};

TEST(StreamedFileTest, HeaderPiecesAndTrailer) {
  auto renderer = std::make_shared<FixedRenderer>();
  for (uint64_t cells : {0, 1, 3, 4, 50}) {
    for (uint64_t piece : {1, 2, 7}) {
      auto layout = ComputeStreamLayout(*renderer, "HEAD\n", "TAIL", cells, piece, 3);
      ASSERT_TRUE(layout.ok());
      std::string want = "HEAD\n";
      ASSERT_TRUE(renderer->Render(0, cells, want, nullptr).ok());
      want += "TAIL";
      EXPECT_EQ(layout->size(), want.size());
      EXPECT_EQ(layout->pieces(), (cells + piece - 1) / piece);
      auto f = MakeStreamedFile(std::make_shared<const StreamLayout>(*layout), renderer);
      for (uint64_t a = 0; a <= want.size() + 1; ++a) {
        for (uint64_t n : {0, 1, 2, 5, 100}) {
          std::string exp = a < want.size() ? want.substr(a, n) : "";
          ASSERT_EQ(Read(*f, a, n), exp) << cells << "/" << piece << " [" << a << ", +" << n << ")";
        }
      }
    }
  }
}

// A renderer whose output changes between the layout pass and the read:
// the read fails as corrupt rather than return bytes of another size.
class UnstableRenderer final : public CellRenderer {
 public:
  core::Status Render(uint64_t first, uint64_t count, std::string& out,
                      core::ReadState*) const override {
    out.append(count * (++calls_ == 1 ? 2 : 3), 'x');
    return core::Ok();
  }
  mutable int calls_ = 0;
};

TEST(StreamedFileTest, PieceOfAnotherSizeIsCorrupt) {
  auto renderer = std::make_shared<UnstableRenderer>();
  auto layout = ComputeStreamLayout(*renderer, "", "", 4, 4, 4);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->size(), 8u);
  auto f = MakeStreamedFile(std::make_shared<const StreamLayout>(*layout), renderer);
  uint8_t buf[8];
  auto n = f->Read(0, buf);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code(), core::ErrorCode::kCorrupt);
  EXPECT_NE(n.error().message().find("layout says 8"), std::string::npos) << n.error().message();
}

// A layout's owner hears of cells that do not fit it (the persistent index
// drops the entry it came from), each time a read finds them.
TEST(StreamedFileTest, APieceOfAnotherSizeIsReportedToTheLayout) {
  auto renderer = std::make_shared<UnstableRenderer>();
  auto layout = ComputeStreamLayout(*renderer, "", "", 4, 4, 4);
  ASSERT_TRUE(layout.ok());
  std::vector<std::string> reasons;
  layout->on_mismatch = [&reasons](const std::string& why) { reasons.push_back(why); };
  auto f = MakeStreamedFile(std::make_shared<const StreamLayout>(*layout), renderer);
  uint8_t buf[8];
  ASSERT_FALSE(f->Read(0, buf).ok());
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("layout says 8"), std::string::npos) << reasons[0];
  // A layout nobody listens on fails the same, reporting nothing.
  auto other = std::make_shared<UnstableRenderer>();
  auto unheard = ComputeStreamLayout(*other, "", "", 4, 4, 4);
  ASSERT_TRUE(unheard.ok());
  auto g = MakeStreamedFile(std::make_shared<const StreamLayout>(*unheard), other);
  EXPECT_FALSE(g->Read(0, buf).ok());
  EXPECT_EQ(reasons.size(), 1u);
}

// The layout pass measures batches on every core: an error in any batch
// fails the pass, whatever the order the batches ran in.
class FailingRenderer final : public CellRenderer {
 public:
  core::Status Render(uint64_t first, uint64_t count, std::string& out,
                      core::ReadState*) const override {
    if (first + count > 37) return core::Error::Corrupt(fmt::format("cell {} broken", 37));
    out.append(count, 'x');
    return core::Ok();
  }
};

TEST(StreamedFileTest, LayoutFailsOnAnyBatchError) {
  FailingRenderer renderer;
  for (uint64_t batch : {2, 4, 64}) {
    auto bad = ComputeStreamLayout(renderer, "", "", 50, 2, batch);
    ASSERT_FALSE(bad.ok()) << batch;
    EXPECT_EQ(bad.error().code(), core::ErrorCode::kCorrupt);
    EXPECT_NE(bad.error().message().find("cell 37 broken"), std::string::npos);
    auto good = ComputeStreamLayout(renderer, "", "", 36, 2, batch);
    ASSERT_TRUE(good.ok()) << batch;
    EXPECT_EQ(good->size(), 36u);
    EXPECT_EQ(good->pieces(), 18u);
  }
}

// Counts the renders of each piece; a render of cell `broken_from_` fails
// once the flag is set (after the layout pass).
class CountingRenderer final : public CellRenderer {
 public:
  explicit CountingRenderer(uint64_t cells) : renders_(cells) {}
  core::Status Render(uint64_t first, uint64_t count, std::string& out,
                      core::ReadState*) const override {
    if (broken_ && first <= broken_from_ && broken_from_ - first < count) {
      return core::Error::Corrupt(fmt::format("cell {} broken", broken_from_));
    }
    ++renders_[first];
    for (uint64_t i = first; i < first + count; ++i) out += std::to_string(i) + ",";
    return core::Ok();
  }
  // Records the release and whether every piece before `to` was rendered.
  void Release(uint64_t from, uint64_t to) const override {
    bool rendered = true;
    for (uint64_t i = 0; i < to && i < renders_.size(); ++i) {
      if (i % piece_ == 0 && renders_[i].load() == 0) rendered = false;
    }
    std::lock_guard<std::mutex> lock(mu_);
    releases_.emplace_back(from, to);
    all_rendered_ = all_rendered_ && rendered;
  }
  mutable std::vector<std::atomic<int>> renders_;  // by the piece's first cell
  std::atomic<bool> broken_{false};
  uint64_t broken_from_ = UINT64_MAX;
  uint64_t piece_ = 1;  // for Release's check
  mutable std::mutex mu_;
  mutable std::vector<std::pair<uint64_t, uint64_t>> releases_;
  mutable bool all_rendered_ = true;
};

// The file a CountingRenderer of `cells` cells makes between header and trailer.
std::string CountingText(uint64_t cells, const std::string& header, const std::string& trailer) {
  std::string text = header;
  for (uint64_t i = 0; i < cells; ++i) text += std::to_string(i) + ",";
  return text + trailer;
}

// A sequential reader's pieces are rendered ahead, in windows split over
// the cores: each piece once, whatever the size of the reads; a seek
// renders the piece it lands in.
TEST(StreamedFileTest, SequentialReadsRenderEachPieceOnce) {
  constexpr uint64_t kCells = 3000, kPiece = 3;
  auto renderer = std::make_shared<CountingRenderer>(kCells);
  auto layout = ComputeStreamLayout(*renderer, "H\n", "T", kCells, kPiece, 64);
  ASSERT_TRUE(layout.ok());
  const std::string want = CountingText(kCells, "H\n", "T");
  ASSERT_EQ(layout->size(), want.size());
  for (auto& r : renderer->renders_) r = 0;
  auto f = MakeStreamedFile(std::make_shared<const StreamLayout>(*layout), renderer);
  std::string got;
  for (uint64_t at = 0; at < want.size(); at += 5) got += Read(*f, at, 5);
  EXPECT_EQ(got, want);
  for (uint64_t first = 0; first < kCells; first += kPiece) {
    ASSERT_EQ(renderer->renders_[first].load(), 1) << "piece at cell " << first;
  }
  // A seek far back: that piece again, alone; reading on renders ahead.
  EXPECT_EQ(Read(*f, 2, 4), want.substr(2, 4));
  EXPECT_EQ(renderer->renders_[0].load(), 2);
  EXPECT_EQ(renderer->renders_[kPiece].load(), 1);
  EXPECT_EQ(Read(*f, 2, 100), want.substr(2, 100));
  EXPECT_EQ(renderer->renders_[kPiece].load(), 2);
}

// A reader going forward releases the cells behind each window it goes on
// to, every piece before them rendered, each cell once; a seek releases
// nothing, and reading on from it releases from there.
TEST(StreamedFileTest, SequentialReadsReleaseTheCellsBehindThem) {
  constexpr uint64_t kCells = 3000, kPiece = 3;
  auto renderer = std::make_shared<CountingRenderer>(kCells);
  renderer->piece_ = kPiece;
  auto layout = ComputeStreamLayout(*renderer, "H\n", "T", kCells, kPiece, 64);
  ASSERT_TRUE(layout.ok());
  const std::string want = CountingText(kCells, "H\n", "T");
  for (auto& r : renderer->renders_) r = 0;
  renderer->releases_.clear();
  auto f = MakeStreamedFile(std::make_shared<const StreamLayout>(*layout), renderer);
  std::string got;
  for (uint64_t at = 0; at < want.size(); at += 7) got += Read(*f, at, 7);
  EXPECT_EQ(got, want);
  const auto releases = renderer->releases_;
  ASSERT_GE(releases.size(), 2u);
  EXPECT_TRUE(renderer->all_rendered_);
  EXPECT_EQ(releases.front().first, 0u);
  for (size_t i = 0; i < releases.size(); ++i) {
    EXPECT_LT(releases[i].first, releases[i].second) << i;
    EXPECT_EQ(releases[i].second % kPiece, 0u) << i;
    if (i > 0) {
      EXPECT_EQ(releases[i].first, releases[i - 1].second) << i;
    }
  }
  // The last window is never released: its cells may still be read.
  EXPECT_LT(releases.back().second, kCells);
  EXPECT_GT(releases.back().second, kCells / 2);
  // A seek back: nothing released; reading on goes on from it.
  EXPECT_EQ(Read(*f, 2, 4), want.substr(2, 4));
  EXPECT_EQ(renderer->releases_.size(), releases.size());
  EXPECT_EQ(Read(*f, 2, 200), want.substr(2, 200));
  ASSERT_GT(renderer->releases_.size(), releases.size());
  EXPECT_EQ(renderer->releases_[releases.size()].first, kPiece);
  EXPECT_TRUE(renderer->all_rendered_);
}

std::string Joined(const core::Pieces& pieces) {
  std::string out;
  for (core::Bytes b : pieces.spans) out += core::AsStringView(b);
  return out;
}

// ReadPieces hands out the rendered text itself, in file order (header,
// pieces, trailer): the bytes Read copies, for reads of every size from
// every place. Pieces a reply still holds keep their bytes while later
// reads render the window again (into other buffers).
TEST(StreamedFileTest, PiecesAreTheBytesOfReadAndOutliveLaterReads) {
  constexpr uint64_t kCells = 400, kPiece = 3;
  auto renderer = std::make_shared<CountingRenderer>(kCells);
  auto layout = ComputeStreamLayout(*renderer, "Head\n", "Tail", kCells, kPiece, 64);
  ASSERT_TRUE(layout.ok());
  const std::string want = CountingText(kCells, "Head\n", "Tail");
  ASSERT_EQ(layout->size(), want.size());
  auto f = MakeStreamedFile(std::make_shared<const StreamLayout>(*layout), renderer);
  ASSERT_TRUE(f->ReadsPieces());
  for (uint64_t at = 0; at <= want.size(); at += 7) {
    for (size_t n : {1, 2, 5, 13, 64, 500, 5000}) {
      core::Pieces pieces;
      auto got = f->ReadPieces(at, n, &pieces);
      ASSERT_TRUE(got.ok()) << got.error().ToString();
      const std::string expect = at < want.size() ? want.substr(at, n) : "";
      ASSERT_EQ(*got, expect.size()) << at << " +" << n;
      ASSERT_EQ(pieces.bytes, expect.size());
      ASSERT_EQ(Joined(pieces), expect) << at << " +" << n;
    }
  }
  // Held across reads that render every window again, far away and back.
  core::Pieces held;
  ASSERT_TRUE(f->ReadPieces(0, 300, &held).ok());
  for (uint64_t at = 300; at < want.size(); at += 100) {
    EXPECT_EQ(Read(*f, at, 100), want.substr(at, 100));
  }
  EXPECT_EQ(Read(*f, 0, 300), want.substr(0, 300));
  EXPECT_EQ(Joined(held), want.substr(0, 300));
}

// A piece that fails in a window rendered ahead fails the read that needs
// it, not the reads of the pieces before it.
TEST(StreamedFileTest, ErrorInAWindowFailsOnlyItsPiece) {
  constexpr uint64_t kCells = 600, kPiece = 2;
  auto renderer = std::make_shared<CountingRenderer>(kCells);
  auto layout = ComputeStreamLayout(*renderer, "", "", kCells, kPiece, 64);
  ASSERT_TRUE(layout.ok());
  renderer->broken_from_ = 301;  // cell 301: piece 150, [300, 302)
  renderer->broken_ = true;
  auto f = MakeStreamedFile(std::make_shared<const StreamLayout>(*layout), renderer);
  const uint64_t good = layout->starts->Start(150);
  std::string got;
  uint8_t buf[7];
  uint64_t at = 0;
  core::Result<size_t> n = size_t{0};
  while (true) {
    n = f->Read(at, buf);
    if (!n.ok() || *n == 0) break;
    at += *n;
  }
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code(), core::ErrorCode::kCorrupt);
  EXPECT_NE(n.error().message().find("cell 301 broken"), std::string::npos);
  EXPECT_GE(at + sizeof(buf), good);
  EXPECT_LE(at, good);
  // Reads before the broken piece still work, after it too.
  std::string before = Read(*f, 0, good);
  EXPECT_EQ(before.size(), good);
  EXPECT_EQ(before.substr(0, 8), "0,1,2,3,");
  const uint64_t after = layout->starts->Start(151);
  EXPECT_EQ(Read(*f, after, 8), "302,303,");
}

// A renderer that knows its total size without rendering (MeasureAll):
// cell i is i % 7 + 1 copies of one letter. Counts the measuring passes.
class SizedRenderer final : public CellRenderer {
 public:
  explicit SizedRenderer(uint64_t cells, int64_t total_error = 0)
      : cells_(cells), total_error_(total_error) {}
  core::Status Render(uint64_t first, uint64_t count, std::string& out,
                      core::ReadState*) const override {
    for (uint64_t i = first; i < first + count; ++i) {
      out.append(i % 7 + 1, static_cast<char>('a' + i % 26));
    }
    return core::Ok();
  }
  core::Status Measure(uint64_t first, uint64_t count, uint64_t piece, std::vector<uint64_t>& sizes,
                       core::ReadState* state) const override {
    ++measures_;
    return CellRenderer::Measure(first, count, piece, sizes, state);
  }
  core::Result<std::optional<uint64_t>> MeasureAll(uint64_t) const override {
    uint64_t total = 0;
    for (uint64_t i = 0; i < cells_; ++i) total += i % 7 + 1;
    return std::optional<uint64_t>(total + total_error_);
  }
  std::string Whole() const {
    std::string out;
    EXPECT_TRUE(Render(0, cells_, out, nullptr).ok());
    return out;
  }
  uint64_t cells_;
  int64_t total_error_;
  mutable std::atomic<int> measures_{0};
};

// A lazy layout knows the size at once and where pieces start as they are
// read: a reader going forward (or a little ahead, within 16 MiB) renders
// its way there and measures nothing; one further ahead has the pieces
// left measured, once. Every way, the bytes are the whole rendering's.
TEST(StreamedFileTest, LazyLayoutFindsPieceStartsAsItIsRead) {
  constexpr uint64_t kCells = 8'000'000, kPiece = 4096;  // 32 MB: twice 16 MiB
  auto renderer = std::make_shared<SizedRenderer>(kCells);
  std::string want = "H\n";
  want += renderer->Whole();
  want += "T";
  ASSERT_GT(want.size(), uint64_t{30} << 20);
  auto fresh = [&] {
    auto layout = ComputeStreamLayout(*renderer, "H\n", "T", kCells, kPiece, 65536);
    EXPECT_TRUE(layout.ok());
    EXPECT_EQ(layout->size(), want.size());
    EXPECT_EQ(layout->starts->known(), 0u);
    return std::make_shared<const StreamLayout>(std::move(*layout));
  };
  // Forward, 1 MiB at a time.
  auto layout = fresh();
  auto f = MakeStreamedFile(layout, renderer);
  std::string got;
  for (uint64_t at = 0; at < want.size(); at += 1 << 20) got += Read(*f, at, 1 << 20);
  EXPECT_TRUE(got == want);
  EXPECT_EQ(layout->starts->known(), layout->pieces());
  EXPECT_EQ(renderer->measures_.load(), 0);
  // Another file over the same layout reads what is known, checked.
  auto g = MakeStreamedFile(layout, renderer);
  EXPECT_EQ(Read(*g, 12345678, 100), want.substr(12345678, 100));

  // A little ahead first: rendered forward, nothing measured.
  layout = fresh();
  f = MakeStreamedFile(layout, renderer);
  EXPECT_EQ(Read(*f, 5'000'000, 300), want.substr(5'000'000, 300));
  EXPECT_EQ(renderer->measures_.load(), 0);
  EXPECT_GT(layout->starts->Start(layout->starts->known()), uint64_t{5'000'300});
  EXPECT_LT(layout->starts->known(), layout->pieces());
  // Then near the end: the pieces left are measured.
  EXPECT_EQ(Read(*f, want.size() - 10, 100), want.substr(want.size() - 10));
  EXPECT_GT(renderer->measures_.load(), 0);
  EXPECT_EQ(layout->starts->known(), layout->pieces());
  EXPECT_EQ(Read(*f, 0, 7), want.substr(0, 7));
  EXPECT_EQ(Read(*f, 20'000'000, 7), want.substr(20'000'000, 7));

  // Far ahead first.
  renderer->measures_ = 0;
  layout = fresh();
  f = MakeStreamedFile(layout, renderer);
  EXPECT_EQ(Read(*f, 20'000'000, 5000), want.substr(20'000'000, 5000));
  EXPECT_GT(renderer->measures_.load(), 0);
  EXPECT_EQ(layout->starts->known(), layout->pieces());
}

// A total that the pieces do not add up to fails the read that finds it
// out as corrupt, rather than return bytes of another size.
TEST(StreamedFileTest, LazyLayoutWithAWrongTotalIsCorrupt) {
  for (int64_t error : {-1, 1}) {
    constexpr uint64_t kCells = 1000, kPiece = 10;
    auto renderer = std::make_shared<SizedRenderer>(kCells, error);
    auto layout = ComputeStreamLayout(*renderer, "", "", kCells, kPiece, 100);
    ASSERT_TRUE(layout.ok());
    auto f = MakeStreamedFile(std::make_shared<const StreamLayout>(*layout), renderer);
    uint8_t buf[64];
    core::Result<size_t> n = size_t{0};
    for (uint64_t at = 0; at < layout->size(); at += *n) {
      n = f->Read(at, buf);
      if (!n.ok() || *n == 0) break;
    }
    ASSERT_FALSE(n.ok()) << error;
    EXPECT_EQ(n.error().code(), core::ErrorCode::kCorrupt);
    EXPECT_NE(n.error().message().find("the layout measured"), std::string::npos)
        << n.error().message();
  }
}

// PieceStarts on its own: what is known grows piece by piece, a known
// piece is checked, a piece past what is known is refused.
TEST(StreamedFileTest, PieceStartsRecordsInOrder) {
  PieceStarts s(10, 3, 25);
  EXPECT_EQ(s.known(), 0u);
  EXPECT_EQ(s.Start(0), 10u);
  EXPECT_FALSE(s.Find(10).has_value());
  EXPECT_EQ(s.Record(1, 5).error().code(), core::ErrorCode::kInvalidArgument);
  ASSERT_TRUE(s.Record(0, 5).ok());
  EXPECT_EQ(s.Find(14), std::optional<uint64_t>(0));
  EXPECT_FALSE(s.Find(15).has_value());
  EXPECT_FALSE(s.Find(9).has_value());
  EXPECT_TRUE(s.Record(0, 5).ok());
  EXPECT_EQ(s.Record(0, 6).error().code(), core::ErrorCode::kCorrupt);
  ASSERT_TRUE(s.Record(1, 0).ok());                                     // an empty piece
  EXPECT_FALSE(s.Find(15).has_value());                                 // piece 2 not known yet
  EXPECT_EQ(s.Record(2, 9).error().code(), core::ErrorCode::kCorrupt);  // ends at 24, not 25
  ASSERT_TRUE(s.Record(2, 10).ok());
  EXPECT_EQ(s.known(), 3u);
  EXPECT_EQ(s.Find(15), std::optional<uint64_t>(2));  // past the empty piece 1
  EXPECT_EQ(s.Find(24), std::optional<uint64_t>(2));
  EXPECT_FALSE(s.Find(25).has_value());
  EXPECT_EQ(s.Record(3, 1).error().code(), core::ErrorCode::kInvalidArgument);
}

TEST(StreamedFileTest, PieceCellsGrowOnlyForHugeViews) {
  EXPECT_EQ(DefaultPieceCells(0), 4096u);
  EXPECT_EQ(DefaultPieceCells(20'000'000), 4096u);
  EXPECT_EQ(DefaultPieceCells(uint64_t{1} << 32), uint64_t{1} << 16);
}

// Listing fragments/ and stat'ing what it holds renders no CSV; resolving a
// fragment by name finds every listed one.
TEST(StreamedFileTest, FragmentListingsRunNoLayoutPass) {
  TreeOptions options;
  auto opened = OpenTree((kCorpus / "dense_2d_fragments").string(), options);
  ASSERT_TRUE(opened.ok()) << opened.error().ToString();
  auto* array_tree = dynamic_cast<ArrayTree*>(opened->get());
  ASSERT_NE(array_tree, nullptr);
  ArrayTree& tree = *array_tree;
  auto list = tree.List("fragments");
  ASSERT_TRUE(list.ok());
  ASSERT_GE(list->size(), 2u);
  for (const auto& e : *list) {
    EXPECT_EQ(e.attr.type, NodeType::kDirectory);
    auto inner = tree.List("fragments/" + e.name + "/attributes");
    ASSERT_TRUE(inner.ok()) << e.name;
    EXPECT_TRUE(tree.GetAttr("fragments/" + e.name + "/tiles.csv").ok());
    EXPECT_TRUE(tree.GetAttr("fragments/" + e.name + "/attributes/a.bin").ok());
  }
  EXPECT_TRUE(tree.List("").ok() && tree.List("history").ok());
  // Listing attributes/ stats the .txt files: those are layout passes; the
  // top levels and fragments/ are not.
  uint64_t after_listings = tree.layout_passes();
  EXPECT_TRUE(tree.List("fragments").ok());
  EXPECT_EQ(tree.layout_passes(), after_listings);
  auto missing = tree.GetAttr("fragments/__nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), core::ErrorCode::kNotFound);
  // A second stat of a streamed file uses the cached layout.
  ASSERT_TRUE(tree.GetAttr("data.csv").ok());
  uint64_t before = tree.layout_passes();
  ASSERT_TRUE(tree.GetAttr("data.csv").ok());
  ASSERT_TRUE(tree.Open("data.csv").ok());
  EXPECT_EQ(tree.layout_passes(), before);
}

// Threads that stat and read the same file at once share one layout pass.
TEST(StreamedFileTest, RacingStatsShareOneLayoutPass) {
  auto opened = OpenTree((kCorpus / "types").string(), TreeOptions{});
  ASSERT_TRUE(opened.ok());
  auto* tree = dynamic_cast<ArrayTree*>(opened->get());
  ASSERT_NE(tree, nullptr);
  uint64_t before = tree->layout_passes();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto a = tree->GetAttr(t % 2 ? "data.csv" : "history/1700000001000/attributes/utf8.txt");
      if (!a.ok()) ++failures;
      auto f = tree->Open(t % 2 ? "data.csv" : "history/1700000001000/attributes/utf8.txt");
      if (!f.ok() || Read(**f, 0, (*f)->size()).size() != (*f)->size()) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(tree->layout_passes(), before + 2);
}

// One layout pass lays out every text file of a view: once data.csv's size
// is known, every .txt and var-sized .bin of the same view is sized with no
// further pass, and every piece start is known, so a read at any offset
// (the last bytes, the middle) gives the bytes of a read of the whole file.
// On arrays with enumerations, nullable and var-sized attributes, string
// dimensions, dense and sparse, with pieces of 3 cells.
TEST(StreamedFileTest, OnePassLaysOutEveryTextFileOfAView) {
  for (const char* name : {"types", "enumerations", "sparse_strdim", "dense_1d", "sparse_2d"}) {
    SCOPED_TRACE(name);
    TreeOptions options;
    options.piece_cells = 3;
    auto opened = OpenTree((kCorpus / name).string(), options);
    ASSERT_TRUE(opened.ok()) << opened.error().ToString();
    auto* tree = dynamic_cast<ArrayTree*>(opened->get());
    ASSERT_NE(tree, nullptr);
    const uint64_t before = tree->layout_passes();
    ASSERT_TRUE(tree->GetAttr("data.csv").ok());
    EXPECT_EQ(tree->layout_passes(), before + 1);
    std::vector<std::string> files = {"data.csv"};
    for (const char* dir : {"attributes", "dimensions"}) {
      auto list = tree->List(dir);
      ASSERT_TRUE(list.ok());
      for (const auto& e : *list) files.push_back(std::string(dir) + "/" + e.name);
    }
    EXPECT_EQ(tree->layout_passes(), before + 1) << "listing attributes/ and dimensions/";
    for (const std::string& path : files) {
      auto f = tree->Open(path);
      ASSERT_TRUE(f.ok()) << path << ": " << f.error().ToString();
      const uint64_t size = (*f)->size();
      const std::string whole = Read(**f, 0, size);
      ASSERT_EQ(whole.size(), size) << path;
      for (uint64_t at : {size / 2, size > 7 ? size - 7 : 0, size / 3}) {
        auto g = tree->Open(path);
        ASSERT_TRUE(g.ok());
        EXPECT_EQ(Read(**g, at, 64), whole.substr(at, 64)) << path << " at " << at;
      }
    }
    EXPECT_EQ(tree->layout_passes(), before + 1) << "reads of the files";
  }
}

}  // namespace
}  // namespace tiledbfs::fusefs::streamed_file_test
