// diff/<T1>..<T2>/'s CSV files rendered a piece at a time (each piece
// resumes the diff stream at a position the pass recorded) hold the same
// bytes as one piece per file, read whole or at any offset. The mount's
// diffs of both corpora are checked against a reference and their recorded
// bytes by tests/diffs/diff_reference.py; this checks the resuming.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fusefs/model/key_file.h"
#include "fusefs/model/tree.h"
#include "tests/fusefs/model/read_file.h"

namespace tiledbfs::fusefs {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(TILEDBFS_TEST_DATA) / "corpus" / "arrays";

std::vector<std::string> HistoryNames(Tree& tree) {
  std::vector<std::string> out;
  auto list = tree.List("history");
  EXPECT_TRUE(list.ok()) << list.error().ToString();
  if (list.ok()) {
    for (const auto& e : *list) out.push_back(e.name);
  }
  return out;
}

TEST(DiffFilesTest, CorpusDiffsInPiecesOfFewRowsEqualOnePiece) {
  std::mt19937_64 rng(5);
  size_t compared = 0;
  for (const auto& e : fs::directory_iterator(kCorpus)) {
    if (!e.is_directory() || e.path().filename() == "group") continue;
    SCOPED_TRACE(e.path().string());
    TreeOptions whole, pieces;
    if (e.path().filename() == "encrypted") {
      auto key = ReadKeyFile((kCorpus / "encrypted.key").string());
      ASSERT_TRUE(key.ok());
      whole.key = pieces.key = *key;
    }
    pieces.piece_cells = 2;  // a position recorded every other row of each file
    auto a = OpenTree(e.path().string(), whole);
    auto b = OpenTree(e.path().string(), pieces);
    ASSERT_TRUE(a.ok() && b.ok());
    std::vector<std::string> at = HistoryNames(**a);
    ASSERT_FALSE(at.empty());
    // Every pair of the first, a middle and the last instant, both ways.
    std::vector<std::string> some = {at.front(), at[at.size() / 2], at.back()};
    for (const auto& t1 : some) {
      for (const auto& t2 : some) {
        for (const char* file : {"added.csv", "removed.csv", "changed.csv"}) {
          const std::string path = "diff/" + t1 + ".." + t2 + "/" + file;
          SCOPED_TRACE(path);
          auto fa = (*a)->Open(path);
          auto fb = (*b)->Open(path);
          ASSERT_TRUE(fa.ok()) << fa.error().ToString();
          ASSERT_TRUE(fb.ok()) << fb.error().ToString();
          const std::string want = Read(**fa, 0, (*fa)->size() + 1);
          ASSERT_EQ(want.size(), (*fa)->size());
          ASSERT_EQ((*fb)->size(), want.size());
          // Anywhere first (pieces rendered out of order), then whole.
          for (int k = 0; k < 6; ++k) {
            const uint64_t offset = rng() % (want.size() + 2);
            const size_t n = static_cast<size_t>(rng() % 200);
            ASSERT_EQ(Read(**fb, offset, n), offset < want.size() ? want.substr(offset, n) : "")
                << "[" << offset << ", +" << n << ")";
          }
          ASSERT_EQ(Read(**fb, 0, want.size() + 1), want);
          compared += want.size();
        }
      }
    }
  }
  EXPECT_GT(compared, 10000u);  // the corpus's diffs are not all empty
}

// Duplicates: a coordinate whose cells one instant has more of makes a
// group of rows, and a piece may start inside the group; two fragments
// make two boxes whose rows interleave.
TEST(DiffFilesTest, PiecesStartingInsideGroupsOfDuplicates) {
  const std::string mk = std::string(TILEDBFS_BIN_DIR) + "/tiledb-mkarray";
  if (!fs::exists(mk)) GTEST_SKIP() << mk << " not built";
  const fs::path dir = fs::temp_directory_path() / ("tiledbfs_diff_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const std::string schema = write("schema.json", R"({
    "array_type": "sparse", "allows_dups": true, "capacity": 4,
    "dims": [{"name": "x", "type": "INT64", "domain": [0, 99], "tile_extent": 10}],
    "attrs": [{"name": "v", "type": "INT32"}]})");
  const std::string array = (dir / "a").string();
  auto run = [&](const std::string& args) { return std::system((mk + " " + args).c_str()) == 0; };
  ASSERT_TRUE(run("create " + array + " --schema " + schema + " --timestamp 1"));
  ASSERT_TRUE(run("write " + array + " --timestamp 10 --csv " +
                  write("1.csv", "x,v\n1,1\n1,2\n5,7\n9,1\n")));
  // Box [1, 9]: x=1 gains 3, 3, 4 (and keeps 1, 2); x=5 loses 7 for 8, 8.
  ASSERT_TRUE(run("write " + array + " --timestamp 20 --csv " +
                  write("2.csv", "x,v\n1,3\n1,4\n1,3\n5,8\n5,8\n9,2\n")));
  // Box [3, 60], interleaving with the first.
  ASSERT_TRUE(run("write " + array + " --timestamp 30 --csv " +
                  write("3.csv", "x,v\n3,1\n3,1\n3,1\n5,9\n60,1\n60,2\n")));
  // In the later view's order (its duplicates: the newest fragment's first).
  const std::vector<std::string> want_added = {
      "x,v\n1,3\n1,4\n1,3\n3,1\n3,1\n3,1\n5,9\n5,8\n5,8\n9,2\n60,2\n60,1\n",
      "x,v\n1,3\n1,4\n1,3\n5,8\n5,8\n9,2\n"};
  size_t at = 0;
  for (const char* span : {"10..30", "10..20"}) {
    SCOPED_TRACE(span);
    for (uint64_t piece : {1, 2, 3, 0}) {
      TreeOptions options;
      options.piece_cells = piece;
      auto tree = OpenTree(array, options);
      ASSERT_TRUE(tree.ok()) << tree.error().ToString();
      auto f = (*tree)->Open(std::string("diff/") + span + "/added.csv");
      ASSERT_TRUE(f.ok()) << f.error().ToString();
      const std::string& want = want_added[at];
      ASSERT_EQ((*f)->size(), want.size()) << "piece " << piece;
      for (uint64_t off = 0; off < want.size(); off += 3) {
        ASSERT_EQ(Read(**f, off, 5), want.substr(off, 5)) << "piece " << piece << " at " << off;
      }
      ASSERT_EQ(Read(**f, 0, want.size() + 1), want) << "piece " << piece;
    }
    ++at;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tiledbfs::fusefs
