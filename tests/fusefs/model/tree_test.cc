// The namespace model on corpus arrays, without FUSE: every file's size is
// the bytes a read returns, reads in small pieces give the whole file, and
// field files hold exactly TileDB's read.
#include "fusefs/model/tree.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

namespace tiledbfs::fusefs {
namespace {

namespace fs = std::filesystem;
const fs::path kCorpus = fs::path(TILEDBFS_TEST_DATA) / "corpus";

std::string ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Reads a whole file in pieces of `piece` bytes.
std::string ReadAll(Tree& tree, const std::string& path, size_t piece) {
  auto f = tree.Open(path);
  EXPECT_TRUE(f.ok()) << path << ": " << f.error().ToString();
  if (!f.ok()) return "";
  std::string out;
  std::vector<uint8_t> buf(piece);
  while (true) {
    auto n = (*f)->Read(out.size(), buf);
    EXPECT_TRUE(n.ok()) << path;
    if (!n.ok() || *n == 0) break;
    out.append(reinterpret_cast<const char*>(buf.data()), *n);
  }
  return out;
}

void Walk(Tree& tree, const std::string& dir, int depth, std::vector<std::string>* files) {
  auto entries = tree.List(dir);
  ASSERT_TRUE(entries.ok()) << dir << ": " << entries.error().ToString();
  for (const auto& e : *entries) {
    std::string p = dir.empty() ? e.name : dir + "/" + e.name;
    if (e.attr.type == NodeType::kDirectory) {
      if (depth < 3) Walk(tree, p, depth + 1, files);
    } else {
      files->push_back(p);
    }
  }
}

TEST(TreeTest, ErrnoForEveryCode) {
  using core::Error;
  EXPECT_EQ(ErrnoFor(Error::NotFound("x")), ENOENT);
  EXPECT_EQ(ErrnoFor(Error::InvalidArgument("x")), EINVAL);
  EXPECT_EQ(ErrnoFor(Error::Corrupt("x")), EIO);
  EXPECT_EQ(ErrnoFor(Error::AccessDenied("x")), EACCES);
  // A request cut short because the daemon is stopping (core/util/stop.h).
  EXPECT_EQ(ErrnoFor(Error::Cancelled("x")), EINTR);
}

TEST(TreeTest, StatSizeIsWhatReadsReturn) {
  for (const char* name : {"dense_2d_fragments", "sparse_2d", "types", "metadata"}) {
    auto tree = OpenTree((kCorpus / "arrays" / name).string(), TreeOptions{});
    ASSERT_TRUE(tree.ok()) << tree.error().ToString();
    std::vector<std::string> files;
    Walk(**tree, "", 0, &files);
    ASSERT_FALSE(files.empty());
    for (const auto& f : files) {
      auto attr = (*tree)->GetAttr(f);
      ASSERT_TRUE(attr.ok()) << f;
      std::string small = ReadAll(**tree, f, 13);
      EXPECT_EQ(attr->size, small.size()) << name << "/" << f;
      EXPECT_EQ(small, ReadAll(**tree, f, 1 << 20)) << name << "/" << f;
    }
  }
}

TEST(TreeTest, FieldFilesHoldTileDBsRead) {
  auto tree = OpenTree((kCorpus / "arrays" / "dense_colmajor").string(), TreeOptions{});
  ASSERT_TRUE(tree.ok());
  fs::path exp = kCorpus / "expected" / "dense_colmajor" / "views";
  EXPECT_EQ(ReadAll(**tree, "attributes/v.bin", 7), ReadText(exp / "latest" / "v.data"));
  EXPECT_EQ(ReadAll(**tree, "dimensions/x.bin", 5), ReadText(exp / "latest" / "x.data"));
  EXPECT_EQ(ReadAll(**tree, "history/1700000002000/attributes/w.bin", 11),
            ReadText(exp / "1700000002000" / "w.data"));
  std::string npy = ReadAll(**tree, "attributes/v.npy", 9);
  ASSERT_GT(npy.size(), 64u);
  EXPECT_EQ(npy.substr(0, 6), "\x93NUMPY");
  std::string data = ReadText(exp / "latest" / "v.data");
  EXPECT_EQ(npy.substr(npy.size() - data.size()), data);
}

// ReadPieces gives what Read gives, at any offset and length: pieces of the
// tiles for the values of fixed-size attributes (.bin, .npy after its
// header), a buffer of its own for the other files.
TEST(TreeTest, PiecesReadTheBytesReadGives) {
  int piece_files = 0;
  for (const char* name : {"dense_2d_fragments", "schema_evolution", "sparse_2d", "types"}) {
    auto tree = OpenTree((kCorpus / "arrays" / name).string(), TreeOptions{});
    ASSERT_TRUE(tree.ok()) << tree.error().ToString();
    std::vector<std::string> files;
    Walk(**tree, "", 0, &files);
    for (const auto& path : files) {
      const std::string whole = ReadAll(**tree, path, 4096);
      auto f = (*tree)->Open(path);
      ASSERT_TRUE(f.ok()) << path;
      if ((*f)->ReadsPieces()) ++piece_files;
      for (size_t piece : {size_t{1000}, size_t{65539}}) {
        std::string out;
        while (true) {
          core::Pieces p;
          auto n = (*f)->ReadPieces(out.size(), piece, &p);
          ASSERT_TRUE(n.ok()) << path << ": " << n.error().ToString();
          ASSERT_EQ(p.bytes, *n) << path;
          if (*n == 0) break;
          for (core::Bytes b : p.spans) out += core::AsStringView(b);
        }
        EXPECT_EQ(out, whole) << name << " " << path << " in pieces of " << piece;
      }
    }
  }
  EXPECT_GT(piece_files, 0) << "no file hands out pieces of its tiles";
}

TEST(TreeTest, MissingPathsAndWrongKeys) {
  auto tree = OpenTree((kCorpus / "arrays" / "dense_1d").string(), TreeOptions{});
  ASSERT_TRUE(tree.ok());
  for (const char* p : {"nope", "attributes/zz.bin", "attributes/a.offsets", "history/notatime",
                        "fragments/__x", "metadata/none"}) {
    auto a = (*tree)->GetAttr(p);
    ASSERT_FALSE(a.ok()) << p;
    EXPECT_EQ(a.error().code(), core::ErrorCode::kNotFound) << p;
  }
  auto missing = OpenTree("/nonexistent/array", TreeOptions{});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), core::ErrorCode::kNotFound);
  auto nokey = OpenTree((kCorpus / "arrays" / "encrypted").string(), TreeOptions{});
  ASSERT_FALSE(nokey.ok());
  EXPECT_EQ(nokey.error().code(), core::ErrorCode::kKey);
}

TEST(TreeTest, HistoryResolvesUnlistedInstantsInEveryForm) {
  auto tree = OpenTree((kCorpus / "arrays" / "dense_2d_fragments").string(), TreeOptions{});
  ASSERT_TRUE(tree.ok());
  std::string a = ReadAll(**tree, "history/1700000002500/data.csv", 4096);
  EXPECT_EQ(a, ReadAll(**tree, "history/2023-11-14T22:13:22.500Z/data.csv", 4096));
  EXPECT_EQ(a, ReadAll(**tree, "history/2023-11-14T22:13:22.000Z/data.csv", 4096));
  EXPECT_NE(a, ReadAll(**tree, "data.csv", 4096));
}

}  // namespace
}  // namespace tiledbfs::fusefs

namespace tiledbfs::fusefs {
namespace {

std::string LogOf(const char* name) {
  auto tree = OpenTree((kCorpus / "arrays" / name).string(), TreeOptions{});
  EXPECT_TRUE(tree.ok());
  return tree.ok() ? ReadAll(**tree, "log.txt", 4096) : "";
}

TEST(TreeTest, LogTellsEveryKindOfEvent) {
  std::string deletes = LogOf("deletes");
  EXPECT_NE(deletes.find("2023-11-14T22:13:20.000Z create "), std::string::npos) << deletes;
  EXPECT_NE(deletes.find("2023-11-14T22:13:23.000Z delete where a < 5\n"), std::string::npos);
  EXPECT_LT(deletes.find("delete where"), deletes.find("22:13:24.000Z write"));
  EXPECT_NE(LogOf("consolidated").find("replacing 4 fragments"), std::string::npos);
  EXPECT_NE(LogOf("consolidated_vacuumed").find("the fragments it replaced were vacuumed"),
            std::string::npos);
  std::string md = LogOf("metadata");
  EXPECT_NE(md.find("22:13:24.000Z metadata delete i8"), std::string::npos) << md;
  std::string evo = LogOf("schema_evolution");
  EXPECT_NE(evo.find("schema-change"), std::string::npos) << evo;
}

}  // namespace
}  // namespace tiledbfs::fusefs
