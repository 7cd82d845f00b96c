#include "fusefs/model/group_tree.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "core/metadata/metadata.h"
#include "core/storage/open/open_storage.h"
#include "fusefs/model/documents.h"
#include "fusefs/model/names.h"
#include "fusefs/model/string_file.h"

namespace tiledbfs::fusefs {

using core::Error;

Result<std::unique_ptr<GroupTree>> GroupTree::Open(const std::string& root,
                                                   std::shared_ptr<const core::Storage> storage,
                                                   const TreeOptions& options,
                                                   std::shared_ptr<TreeCaches> caches) {
  std::unique_ptr<GroupTree> g(new GroupTree());
  g->root_ = root;
  g->storage_ = std::move(storage);
  g->options_ = options;
  g->caches_ = std::move(caches);
  g->folder_ = {g->storage_.get(), g->timestamp(), g->options_.key ? &*g->options_.key : nullptr,
                g->options_.limits};
  ASSIGN_OR_RETURN(auto members, g->Members());
  (void)members;
  return g;
}

uint64_t GroupTree::timestamp() const {
  return options_.timestamp_ms ? static_cast<uint64_t>(*options_.timestamp_ms) : UINT64_MAX;
}

Result<std::vector<core::GroupMember>> GroupTree::Members() {
  const core::EncryptionKey* key = options_.key ? &*options_.key : nullptr;
  return core::LoadGroupMembers(*storage_, timestamp(), key, options_.limits);
}

Result<Tree*> GroupTree::Member(const std::string& file_name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(file_name);
  if (it != members_.end()) return it->second.get();
  const core::EncryptionKey* key = options_.key ? &*options_.key : nullptr;
  ASSIGN_OR_RETURN(auto members,
                   core::LoadGroupMembers(*storage_, timestamp(), key, options_.limits));
  for (const auto& m : members) {
    if (EscapeName(m.name) != file_name) continue;
    Result<std::string> path = core::ResolveMemberUri(root_, m.uri, m.relative);
    if (!path.ok()) {
      return Error::Unsupported(fmt::format("member {}: {}", m.name, path.error().message()));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<Tree> t, OpenFolder(*path, options_, caches_));
    Tree* raw = t.get();
    members_[file_name] = std::move(t);
    return raw;
  }
  return Error::NotFound(fmt::format("{}: no such member", file_name));
}

Scope GroupTree::OwnScope() const {
  Scope s;
  s.kind = kGroupView;
  s.immutable = options_.timestamp_ms.has_value();
  s.group = &folder_;
  return s;
}

Result<std::shared_ptr<const std::string>> GroupTree::RenderOwn(
    const NamespaceEntry& e, const std::vector<std::string>& parts) {
  const std::string path = fmt::format("{}", fmt::join(parts, "/"));
  const Scope scope = OwnScope();
  if (e.type == NodeType::kDirectory) {
    if (parts.size() == 1) return Error::InvalidArgument(fmt::format("{}: is a directory", path));
    if (parts.size() == 2 && e.dir == DirKind::kMetadata) {
      ASSIGN_OR_RETURN(std::string text, RenderMetadataValue(scope, UnescapeName(parts[1])));
      return std::make_shared<const std::string>(std::move(text));
    }
  } else if (parts.size() == 1 && e.file == FileKind::kDocument) {
    ASSIGN_OR_RETURN(std::string text, e.render(scope));
    return std::make_shared<const std::string>(std::move(text));
  }
  return Error::NotFound(fmt::format("{}: no such file", path));
}

Result<NodeAttr> GroupTree::GetAttr(const std::string& path) {
  std::vector<std::string> parts = SplitPath(path);
  NodeAttr a;
  a.immutable = options_.timestamp_ms.has_value();
  const NamespaceEntry* e = parts.empty() ? nullptr : FindEntry(kGroupView, parts[0]);
  if (parts.empty() || (e != nullptr && e->type == NodeType::kDirectory && parts.size() == 1)) {
    a.type = NodeType::kDirectory;
    return a;
  }
  if (e != nullptr) {
    ASSIGN_OR_RETURN(auto s, RenderOwn(*e, parts));
    a.size = s->size();
    return a;
  }
  ASSIGN_OR_RETURN(Tree * m, Member(parts[0]));
  std::string rest = path.substr(std::min(path.size(), parts[0].size() + 1));
  return m->GetAttr(parts.size() == 1 ? "" : rest);
}

Result<std::vector<DirEntryAttr>> GroupTree::List(const std::string& path) {
  std::vector<std::string> parts = SplitPath(path);
  std::vector<DirEntryAttr> out;
  if (parts.empty()) {
    // The group's own entries, files unsized (GetAttr renders them): a
    // damaged metadata file fails them, not the listing of the members.
    for (const NamespaceEntry& e : NamespaceEntries()) {
      if ((e.views & kGroupView) == 0) continue;
      NodeAttr a;
      a.immutable = options_.timestamp_ms.has_value();
      a.type = e.type;
      a.sized = e.type == NodeType::kDirectory;
      out.push_back({std::string(e.name), a});
    }
    ASSIGN_OR_RETURN(auto members, Members());
    for (const auto& m : members) {
      NodeAttr a;
      a.type = NodeType::kDirectory;
      out.push_back({EscapeName(m.name), a});
    }
    return out;
  }
  if (const NamespaceEntry* e = FindEntry(kGroupView, parts[0])) {
    if (parts.size() != 1 || e->type != NodeType::kDirectory || e->dir != DirKind::kMetadata) {
      TRY(GetAttr(path));
      return Error::InvalidArgument(fmt::format("{}: not a directory", path));
    }
    ASSIGN_OR_RETURN(auto md, ViewMetadata(OwnScope()));
    for (const auto& [k, v] : md) {
      NodeAttr a;
      a.size = MetadataValueText(v).size();
      out.push_back({EscapeName(k), a});
    }
    return out;
  }
  ASSIGN_OR_RETURN(Tree * m, Member(parts[0]));
  std::string rest = parts.size() == 1 ? "" : path.substr(parts[0].size() + 1);
  return m->List(rest);
}

Result<std::unique_ptr<OpenFile>> GroupTree::Open(const std::string& path) {
  std::vector<std::string> parts = SplitPath(path);
  if (parts.empty()) return Error::InvalidArgument("/: is a directory");
  if (const NamespaceEntry* e = FindEntry(kGroupView, parts[0])) {
    ASSIGN_OR_RETURN(auto s, RenderOwn(*e, parts));
    auto file = std::make_unique<StringFile>(s);
    // Rendered at each open: named by its bytes (a 64-bit hash), so that
    // opens of the same bytes share the kernel's page cache.
    file->snapshot_id = std::hash<std::string_view>()(*s) | 1;
    return std::unique_ptr<OpenFile>(std::move(file));
  }
  ASSIGN_OR_RETURN(Tree * m, Member(parts[0]));
  if (parts.size() == 1) return Error::InvalidArgument(fmt::format("{}: is a directory", path));
  return m->Open(path.substr(parts[0].size() + 1));
}

Result<uint64_t> GroupTree::Refresh() {
  std::vector<Tree*> members;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, tree] : members_) members.push_back(tree.get());
  }
  uint64_t sum = 0;
  for (Tree* m : members) {
    ASSIGN_OR_RETURN(uint64_t epoch, m->Refresh());
    sum += epoch;
  }
  return sum;
}

}  // namespace tiledbfs::fusefs
