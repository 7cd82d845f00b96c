// A small in-memory Tree for exercising the FUSE adapter through a real
// mount without the TileDB model (tests/mount/adapter_mount_test.py checks
// exactly this layout):
//
//   hello.txt            "hello, world\n", mtime 1700000001234 ms, live
//   empty                0 bytes
//   big.bin              5 MiB + 123 bytes, byte i = i % 251, never held
//                        whole: reads hand out pieces of up to 8191 bytes
//                        (OpenFile::ReadPieces; FakeTreeOptions change both)
//   pieces.bin           3 MiB + 17 bytes, byte i = i % 241, in pieces of
//                        100 bytes: a 1 MiB read is over IOV_MAX pieces
//   chunky.bin           300001 bytes, byte i = i % 253; Read returns at
//                        most 1000 bytes per call (the adapter must loop)
//   name, with %2F.txt   "odd\n"
//   counter.txt          live: each open reads "open 00000001\n", then 2, ...
//   dir/a.txt "a\n", dir/b.txt "bb\n", dir/sub/c.txt "ccc\n"
//   many/f0000 .. many/f1999   "f0000\n" ...
//   history/2023-11-14T22:13:20.000Z/   immutable (mtime 1700000000000):
//       x.txt "x\n", counter.txt (as above, but immutable: kernel-cached)
//   broken/corrupt.bin   100 bytes; Read fails kCorrupt
//   broken/locked.bin    10 bytes; Open fails kKey
//   broken/throws.bin    10 bytes; Read throws std::runtime_error
//   broken/unlistable/   List fails kCorrupt
//   growing/             live: the k-th List gives g0000 .. g(1000+k-1),
//                        empty files
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fusefs/model/tree.h"

namespace tiledbfs::fusefs::testing {

struct FakeTreeOptions {
  uint64_t big_bytes = (uint64_t{5} << 20) + 123;  // the size of big.bin
  uint64_t big_piece = 8191;                       // the most bytes per piece of it
};

class PatternBuffer;

class FakeTree : public Tree {
 public:
  explicit FakeTree(FakeTreeOptions options = {});
  Result<NodeAttr> GetAttr(const std::string& path) override;
  Result<std::vector<DirEntryAttr>> List(const std::string& path) override;
  Result<std::unique_ptr<OpenFile>> Open(const std::string& path) override;
  void Serving() override { ++serving_calls_; }
  // How often a mount said it serves (Tree::Serving).
  int serving_calls() const { return serving_calls_; }

 private:
  struct Node {
    NodeAttr attr;
    std::function<std::string()> content;  // files: made at open
    enum class Fault {
      kNone,
      kReadCorrupt,
      kOpenKey,
      kReadThrows,
      kListCorrupt,
      kChunky,
      kGrowing
    };
    Fault fault = Fault::kNone;
    // Pattern files (AddPatternFile): their bytes, and the most per piece.
    std::shared_ptr<const PatternBuffer> pattern;
    uint64_t piece = 0;
  };
  void AddDir(const std::string& path, bool immutable = false);
  void AddFile(const std::string& path, std::function<std::string()> content, uint64_t size,
               bool immutable = false, Node::Fault fault = Node::Fault::kNone);
  // A live file of `size` bytes, byte i = i % period, never materialised.
  void AddPatternFile(const std::string& path, uint64_t size, unsigned period, uint64_t piece);

  std::map<std::string, Node> nodes_;
  std::atomic<int> live_opens_{0};
  std::atomic<int> frozen_opens_{0};
  std::atomic<uint64_t> live_snapshots_{1};
  std::atomic<int> growing_lists_{0};
  std::atomic<int> serving_calls_{0};
};

}  // namespace tiledbfs::fusefs::testing
