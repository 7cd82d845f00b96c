#include "tests/fusefs/fuse/fake_tree.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "fusefs/fuse/inode_table.h"

namespace tiledbfs::fusefs::testing {

// The bytes of a pattern (byte i = i % period) from any offset on: kRun
// bytes at At(offset).
class PatternBuffer {
 public:
  static constexpr size_t kRun = size_t{1} << 20;
  explicit PatternBuffer(unsigned period) : period_(period), bytes_(kRun + period) {
    for (size_t i = 0; i < bytes_.size(); ++i) bytes_[i] = static_cast<uint8_t>(i % period);
  }
  const uint8_t* At(uint64_t offset) const { return bytes_.data() + offset % period_; }

 private:
  unsigned period_;
  std::vector<uint8_t> bytes_;
};

namespace {

using core::Error;

constexpr int64_t kLiveMtime = 1700000001234;
constexpr int64_t kFrozenMtime = 1700000000000;

std::string Pattern(size_t n, unsigned period) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i % period);
  return s;
}

std::string Counter(int n) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "open %08d\n", n);
  return buf;
}

class StringFile : public OpenFile {
 public:
  StringFile(std::string data, size_t max_chunk, bool corrupt, bool throws)
      : data_(std::move(data)), max_chunk_(max_chunk), corrupt_(corrupt), throws_(throws) {}
  uint64_t size() const override { return data_.size(); }
  Result<size_t> Read(uint64_t offset, std::span<uint8_t> out) override {
    if (corrupt_) return Error::Corrupt("__fragments/x/a0.tdb offset 64: tile checksum mismatch");
    if (throws_) throw std::runtime_error("fake tree: deliberate exception");
    if (offset >= data_.size()) return size_t{0};
    const size_t n = std::min({out.size(), data_.size() - static_cast<size_t>(offset), max_chunk_});
    std::memcpy(out.data(), data_.data() + offset, n);
    return n;
  }

 private:
  std::string data_;
  size_t max_chunk_;
  bool corrupt_;
  bool throws_;
};

// byte i = i % period, never materialised: Read copies from the pattern's
// buffer, ReadPieces hands out spans of it of at most `piece` bytes (the
// adapter's writev of pieces; for pieces under a page on average or past
// IOV_MAX of them, its copy).
class PatternFile : public OpenFile {
 public:
  PatternFile(uint64_t size, std::shared_ptr<const PatternBuffer> pattern, uint64_t piece)
      : size_(size), pattern_(std::move(pattern)), piece_(std::max<uint64_t>(piece, 1)) {}
  uint64_t size() const override { return size_; }
  Result<size_t> Read(uint64_t offset, std::span<uint8_t> out) override {
    size_t done = 0;
    while (done < out.size() && offset + done < size_) {
      const size_t n = std::min<uint64_t>(
          {out.size() - done, size_ - offset - done, uint64_t{PatternBuffer::kRun}});
      std::memcpy(out.data() + done, pattern_->At(offset + done), n);
      done += n;
    }
    return done;
  }
  bool ReadsPieces() const override { return true; }
  Result<size_t> ReadPieces(uint64_t offset, size_t n, core::Pieces* out) override {
    size_t done = 0;
    while (done < n && offset + done < size_) {
      const size_t k = std::min<uint64_t>(
          {n - done, size_ - offset - done, piece_, uint64_t{PatternBuffer::kRun}});
      out->Add(pattern_->At(offset + done), k);
      done += k;
    }
    out->keep.push_back(pattern_);
    return done;
  }

 private:
  uint64_t size_;
  std::shared_ptr<const PatternBuffer> pattern_;
  uint64_t piece_;
};

}  // namespace

void FakeTree::AddDir(const std::string& path, bool immutable) {
  Node n;
  n.attr.type = NodeType::kDirectory;
  n.attr.mtime_ms = immutable ? kFrozenMtime : kLiveMtime;
  n.attr.immutable = immutable;
  nodes_[path] = std::move(n);
}

void FakeTree::AddFile(const std::string& path, std::function<std::string()> content, uint64_t size,
                       bool immutable, Node::Fault fault) {
  Node n;
  n.attr.type = NodeType::kFile;
  n.attr.size = size;
  n.attr.mtime_ms = immutable ? kFrozenMtime : kLiveMtime;
  n.attr.immutable = immutable;
  n.content = std::move(content);
  n.fault = fault;
  nodes_[path] = std::move(n);
}

void FakeTree::AddPatternFile(const std::string& path, uint64_t size, unsigned period,
                              uint64_t piece) {
  AddFile(path, nullptr, size);
  nodes_[path].pattern = std::make_shared<const PatternBuffer>(period);
  nodes_[path].piece = piece;
}

FakeTree::FakeTree(FakeTreeOptions options) {
  auto text = [](std::string s) { return [s] { return s; }; };
  AddDir("");
  AddFile("hello.txt", text("hello, world\n"), 13);
  AddFile("empty", text(""), 0);
  AddPatternFile("big.bin", options.big_bytes, 251, options.big_piece);
  AddPatternFile("pieces.bin", (uint64_t{3} << 20) + 17, 241, 100);
  AddFile(
      "chunky.bin", [] { return Pattern(300001, 253); }, 300001, false, Node::Fault::kChunky);
  AddFile("name, with %2F.txt", text("odd\n"), 4);
  AddFile(
      "counter.txt", [this] { return Counter(++live_opens_); }, 14);
  AddDir("dir");
  AddFile("dir/a.txt", text("a\n"), 2);
  AddFile("dir/b.txt", text("bb\n"), 3);
  AddDir("dir/sub");
  AddFile("dir/sub/c.txt", text("ccc\n"), 4);
  AddDir("many");
  for (int i = 0; i < 2000; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "f%04d", i);
    AddFile(std::string("many/") + name, text(std::string(name) + "\n"), 6);
  }
  AddDir("history");
  const std::string h = "history/2023-11-14T22:13:20.000Z";
  AddDir(h, true);
  AddFile(h + "/x.txt", text("x\n"), 2, true);
  AddFile(
      h + "/counter.txt", [this] { return Counter(++frozen_opens_); }, 14, true);
  AddDir("broken");
  AddFile("broken/corrupt.bin", text(std::string(100, 'c')), 100, false, Node::Fault::kReadCorrupt);
  AddFile("broken/locked.bin", text(std::string(10, 'k')), 10, false, Node::Fault::kOpenKey);
  AddFile("broken/throws.bin", text(std::string(10, 't')), 10, false, Node::Fault::kReadThrows);
  AddDir("broken/unlistable");
  nodes_["broken/unlistable"].fault = Node::Fault::kListCorrupt;
  AddDir("growing");
  nodes_["growing"].fault = Node::Fault::kGrowing;
}

namespace {

// "growing/g0042" -> 42; -1 for any other path.
int GrowingIndex(const std::string& path) {
  const std::string prefix = "growing/g";
  if (path.size() != prefix.size() + 4 || path.compare(0, prefix.size(), prefix) != 0) return -1;
  int n = 0;
  for (size_t i = prefix.size(); i < path.size(); ++i) {
    if (path[i] < '0' || path[i] > '9') return -1;
    n = n * 10 + (path[i] - '0');
  }
  return n;
}

NodeAttr GrowingFile() {
  NodeAttr a;
  a.type = NodeType::kFile;
  a.mtime_ms = kLiveMtime;
  return a;
}

}  // namespace

Result<NodeAttr> FakeTree::GetAttr(const std::string& path) {
  if (const int g = GrowingIndex(path); g >= 0 && g < 1000 + growing_lists_) return GrowingFile();
  auto it = nodes_.find(path);
  if (it == nodes_.end()) return Error::NotFound("no such file: " + path);
  return it->second.attr;
}

Result<std::vector<DirEntryAttr>> FakeTree::List(const std::string& path) {
  auto it = nodes_.find(path);
  if (it == nodes_.end()) return Error::NotFound("no such directory: " + path);
  if (it->second.attr.type != NodeType::kDirectory) {
    return Error::InvalidArgument("not a directory: " + path);
  }
  if (it->second.fault == Node::Fault::kListCorrupt) {
    return Error::Corrupt("__schema/__1_1_x: bad attribute count");
  }
  std::vector<DirEntryAttr> out;
  if (it->second.fault == Node::Fault::kGrowing) {
    const int count = 1000 + ++growing_lists_;
    for (int i = 0; i < count; ++i) {
      char name[16];
      std::snprintf(name, sizeof(name), "g%04d", i);
      out.push_back({name, GrowingFile()});
    }
    return out;
  }
  for (const auto& [p, n] : nodes_) {
    if (p.empty() || ParentPath(p) != path) continue;
    out.push_back({p.substr(path.empty() ? 0 : path.size() + 1), n.attr});
  }
  return out;
}

Result<std::unique_ptr<OpenFile>> FakeTree::Open(const std::string& path) {
  if (const int g = GrowingIndex(path); g >= 0 && g < 1000 + growing_lists_) {
    return std::unique_ptr<OpenFile>(std::make_unique<StringFile>("", SIZE_MAX, false, false));
  }
  auto it = nodes_.find(path);
  if (it == nodes_.end()) return Error::NotFound("no such file: " + path);
  const Node& n = it->second;
  if (n.attr.type != NodeType::kFile) return Error::InvalidArgument("a directory: " + path);
  if (n.fault == Node::Fault::kOpenKey) return Error::Key("wrong key for __fragments/x");
  if (n.pattern) {
    auto file = std::make_unique<PatternFile>(n.attr.size, n.pattern, n.piece);
    file->snapshot_id = 1;  // the same bytes at every open
    return std::unique_ptr<OpenFile>(std::move(file));
  }
  const size_t chunk = n.fault == Node::Fault::kChunky ? 1000 : SIZE_MAX;
  auto file = std::make_unique<StringFile>(n.content(), chunk, n.fault == Node::Fault::kReadCorrupt,
                                           n.fault == Node::Fault::kReadThrows);
  // Immutable files read the same bytes at every open; a live one may not.
  file->snapshot_id = n.attr.immutable ? 1 : ++live_snapshots_;
  return std::unique_ptr<OpenFile>(std::move(file));
}

}  // namespace tiledbfs::fusefs::testing
