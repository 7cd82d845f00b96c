// Inode numbers <-> tree paths for one mount, with the kernel's lookup counts.
//
// Contract (fuse_lowlevel.h, "lookup count"): every successful lookup (and
// every readdirplus entry other than "." and "..") adds one to a node's
// count; forget subtracts; a node whose count reaches zero is dropped. The
// root (FUSE_ROOT_ID = 1, path "") is never dropped.
//
// Stability: a path's inode number is a 64-bit hash of the path, so it is
// the same every time the path is looked up, for the mount's life (and across
// mounts), even after the kernel forgot it, and readdir can give the same
// d_ino without a lookup. Only if two paths known at the same time hash to
// the same number does the later one take the next free number. The table
// holds only nodes the kernel knows, so its size is bounded by the kernel's
// inode cache, not by how many paths were ever visited.
//
// Layout: one map by number holds each node's path once; a path is found
// at its hash (its home number), and only the rare paths that had to take
// another number are also kept by path. A lookup is one probe of the map
// and a string compare (find and ls -l over 10,000-fragment arrays make
// hundreds of thousands); the *Child forms hash "parent/name" without
// building it.
//
// Thread-safe: every method takes the table's lock.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tiledbfs::fusefs {

class InodeTable {
 public:
  using HashFunction = uint64_t (*)(std::string_view path);
  static constexpr uint64_t kRootIno = 1;

  struct Node {
    std::string path;
    bool immutable = false;  // from the node's last attributes
  };

  // `hash` is replaceable so that a test can force collisions.
  explicit InodeTable(HashFunction hash = &HashPath);

  // Counts one kernel reference to `path` (adding it on first use) and
  // records whether its attributes say it is immutable. Returns its number.
  uint64_t Lookup(const std::string& path, bool immutable);

  // The number Lookup(path) would return now, without counting a reference.
  uint64_t Peek(const std::string& path) const;

  // Lookup and Peek of ChildPath(parent, name), building that path only
  // when the node is added.
  uint64_t LookupChild(const std::string& parent, std::string_view name, bool immutable);
  uint64_t PeekChild(const std::string& parent, std::string_view name) const;

  // The node behind `ino`; nullopt if the kernel never had it or forgot it.
  std::optional<Node> Get(uint64_t ino) const;

  // Updates the immutable flag of a known node (after a getattr).
  void SetImmutable(uint64_t ino, bool immutable);

  // Drops `nlookup` references; the node goes when none are left (then
  // returns true). Unknown numbers and counts larger than held are ignored
  // (never underflow).
  bool Forget(uint64_t ino, uint64_t nlookup);

  // The nodes (number and path) whose attributes said immutable.
  std::vector<std::pair<uint64_t, std::string>> ImmutableNodes() const;

  // Nodes held, the root included.
  size_t size() const;

  // FNV-1a over the bytes, then a 64-bit finalizer (splitmix64) to spread.
  static uint64_t HashPath(std::string_view path);

 private:
  struct Entry {
    Node node;
    uint64_t nlookup = 0;
  };

  // A path given as parent + "/" + name (or name alone when parent is
  // empty), or whole (parent only).
  struct PathParts {
    std::string_view parent;
    std::string_view name;
    bool child = false;
    size_t size() const {
      return child ? (parent.empty() ? 0 : parent.size() + 1) + name.size() : parent.size();
    }
    bool Equals(const std::string& path) const;
    std::string Build() const;
  };

  uint64_t HomeOf(const PathParts& p) const;
  // The number the path holds, or would take now (lock held).
  uint64_t NumberFor(const PathParts& p, uint64_t home, bool* held) const;
  uint64_t FreeNumberFrom(uint64_t ino) const;  // lock held
  uint64_t DoLookup(const PathParts& p, bool immutable);
  uint64_t DoPeek(const PathParts& p) const;

  HashFunction hash_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Entry> by_ino_;
  // Paths not at their home number (a collision sent them further).
  std::unordered_map<std::string, uint64_t> displaced_;
};

// "a/b" + "c" -> "a/b/c"; "" + "c" -> "c".
std::string ChildPath(const std::string& parent, std::string_view name);

// "a/b/c" -> "a/b"; "a" -> ""; "" -> "".
std::string ParentPath(const std::string& path);

}  // namespace tiledbfs::fusefs
