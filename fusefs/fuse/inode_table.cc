#include "fusefs/fuse/inode_table.h"

namespace tiledbfs::fusefs {

InodeTable::InodeTable(HashFunction hash) : hash_(hash) {
  by_ino_.emplace(kRootIno, Entry{Node{"", false}, 1});
  by_path_.emplace("", kRootIno);
}

uint64_t InodeTable::HashPath(std::string_view path) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : path) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ULL;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

uint64_t InodeTable::FreeNumberFor(const std::string& path) const {
  // 0 is not an inode and 1 is the root; probe upwards past numbers held by
  // other paths. Terminates: the table holds far fewer than 2^64 numbers.
  uint64_t ino = hash_(path);
  while (ino <= kRootIno || by_ino_.count(ino) != 0) ++ino;
  return ino;
}

uint64_t InodeTable::Lookup(const std::string& path, bool immutable) {
  std::lock_guard lock(mu_);
  if (auto it = by_path_.find(path); it != by_path_.end()) {
    Entry& e = by_ino_.at(it->second);
    ++e.nlookup;
    e.node.immutable = immutable;
    return it->second;
  }
  const uint64_t ino = FreeNumberFor(path);
  by_ino_.emplace(ino, Entry{Node{path, immutable}, 1});
  by_path_.emplace(path, ino);
  return ino;
}

uint64_t InodeTable::Peek(const std::string& path) const {
  std::lock_guard lock(mu_);
  if (auto it = by_path_.find(path); it != by_path_.end()) return it->second;
  return FreeNumberFor(path);
}

std::optional<InodeTable::Node> InodeTable::Get(uint64_t ino) const {
  std::lock_guard lock(mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return std::nullopt;
  return it->second.node;
}

void InodeTable::SetImmutable(uint64_t ino, bool immutable) {
  std::lock_guard lock(mu_);
  if (auto it = by_ino_.find(ino); it != by_ino_.end()) it->second.node.immutable = immutable;
}

bool InodeTable::Forget(uint64_t ino, uint64_t nlookup) {
  std::lock_guard lock(mu_);
  if (ino == kRootIno) return false;
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return false;
  if (it->second.nlookup > nlookup) {
    it->second.nlookup -= nlookup;
    return false;
  }
  by_path_.erase(it->second.node.path);
  by_ino_.erase(it);
  return true;
}

std::vector<std::pair<uint64_t, std::string>> InodeTable::ImmutableNodes() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<uint64_t, std::string>> out;
  for (const auto& [ino, entry] : by_ino_) {
    if (entry.node.immutable) out.emplace_back(ino, entry.node.path);
  }
  return out;
}

size_t InodeTable::size() const {
  std::lock_guard lock(mu_);
  return by_ino_.size();
}

std::string ChildPath(const std::string& parent, std::string_view name) {
  if (parent.empty()) return std::string(name);
  std::string out;
  out.reserve(parent.size() + 1 + name.size());
  out += parent;
  out += '/';
  out += name;
  return out;
}

std::string ParentPath(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

}  // namespace tiledbfs::fusefs
