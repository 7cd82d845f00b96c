#include "fusefs/fuse/inode_table.h"

namespace tiledbfs::fusefs {

namespace {

constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ULL;

uint64_t Fnv(uint64_t h, std::string_view bytes) {
  for (char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t Mix(uint64_t h) {
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

}  // namespace

InodeTable::InodeTable(HashFunction hash) : hash_(hash) {
  by_ino_.emplace(kRootIno, Entry{Node{"", false}, 1});
}

uint64_t InodeTable::HashPath(std::string_view path) { return Mix(Fnv(kFnvBasis, path)); }

bool InodeTable::PathParts::Equals(const std::string& path) const {
  if (!child || parent.empty()) return path == (child ? name : parent);
  return path.size() == parent.size() + 1 + name.size() &&
         std::string_view(path).substr(0, parent.size()) == parent && path[parent.size()] == '/' &&
         std::string_view(path).substr(parent.size() + 1) == name;
}

std::string InodeTable::PathParts::Build() const {
  if (!child) return std::string(parent);
  return ChildPath(std::string(parent), name);
}

uint64_t InodeTable::HomeOf(const PathParts& p) const {
  if (hash_ != &HashPath) return hash_(p.Build());
  if (!p.child) return HashPath(p.parent);
  uint64_t h = kFnvBasis;
  if (!p.parent.empty()) h = Fnv(Fnv(h, p.parent), "/");
  return Mix(Fnv(h, p.name));
}

uint64_t InodeTable::FreeNumberFrom(uint64_t ino) const {
  // 0 is not an inode and 1 is the root; probe upwards past numbers held by
  // other paths. Terminates: the table holds far fewer than 2^64 numbers.
  while (ino <= kRootIno || by_ino_.count(ino) != 0) ++ino;
  return ino;
}

uint64_t InodeTable::NumberFor(const PathParts& p, uint64_t home, bool* held) const {
  *held = true;
  if (p.size() == 0) return kRootIno;
  if (!displaced_.empty()) {
    if (auto it = displaced_.find(p.Build()); it != displaced_.end()) return it->second;
  }
  if (home > kRootIno) {
    auto it = by_ino_.find(home);
    if (it == by_ino_.end()) {
      *held = false;
      return home;
    }
    if (p.Equals(it->second.node.path)) return home;
  }
  *held = false;
  return FreeNumberFrom(home);
}

uint64_t InodeTable::DoLookup(const PathParts& p, bool immutable) {
  const uint64_t home = HomeOf(p);
  std::lock_guard lock(mu_);
  bool held = false;
  const uint64_t ino = NumberFor(p, home, &held);
  if (held) {
    Entry& e = by_ino_.at(ino);
    ++e.nlookup;
    e.node.immutable = immutable;
    return ino;
  }
  std::string path = p.Build();
  if (ino != home) displaced_.emplace(path, ino);
  by_ino_.emplace(ino, Entry{Node{std::move(path), immutable}, 1});
  return ino;
}

uint64_t InodeTable::DoPeek(const PathParts& p) const {
  const uint64_t home = HomeOf(p);
  std::lock_guard lock(mu_);
  bool held = false;
  return NumberFor(p, home, &held);
}

uint64_t InodeTable::Lookup(const std::string& path, bool immutable) {
  return DoLookup(PathParts{path, {}, false}, immutable);
}

uint64_t InodeTable::Peek(const std::string& path) const {
  return DoPeek(PathParts{path, {}, false});
}

uint64_t InodeTable::LookupChild(const std::string& parent, std::string_view name, bool immutable) {
  return DoLookup(PathParts{parent, name, true}, immutable);
}

uint64_t InodeTable::PeekChild(const std::string& parent, std::string_view name) const {
  return DoPeek(PathParts{parent, name, true});
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
  if (!displaced_.empty()) displaced_.erase(it->second.node.path);
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
