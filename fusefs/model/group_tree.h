// The namespace of a group (docs/namespace.md "A group"): its own entries
// (group.json, its metadata: the kGroupView rows of namespace_table.h), and
// one folder per member, each an array or group tree opened on first use.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/metadata/group.h"
#include "fusefs/model/array_tree.h"
#include "fusefs/model/namespace_table.h"

namespace tiledbfs::fusefs {

class GroupTree final : public Tree {
 public:
  // `root` is the group folder as given by the user (for relative members).
  static Result<std::unique_ptr<GroupTree>> Open(const std::string& root,
                                                 std::shared_ptr<const core::Storage> storage,
                                                 const TreeOptions& options,
                                                 std::shared_ptr<TreeCaches> caches);

  Result<NodeAttr> GetAttr(const std::string& path) override;
  Result<std::vector<DirEntryAttr>> List(const std::string& path) override;
  Result<std::unique_ptr<OpenFile>> Open(const std::string& path) override;
  // The members opened so far; the sum of their counts.
  Result<uint64_t> Refresh() override;
  void Serving() override { caches_->Serving(); }

 private:
  GroupTree() = default;
  Result<std::vector<core::GroupMember>> Members();
  // The member tree for a member's file name, opened once.
  Result<Tree*> Member(const std::string& file_name);
  // The scope the table's renderers see for the group's own entries.
  Scope OwnScope() const;
  // The bytes of own entry `e` (parts[0]) or of a file in it (parts[1]).
  Result<std::shared_ptr<const std::string>> RenderOwn(const NamespaceEntry& e,
                                                       const std::vector<std::string>& parts);
  uint64_t timestamp() const;

  std::string root_;
  std::shared_ptr<const core::Storage> storage_;
  TreeOptions options_;
  std::shared_ptr<TreeCaches> caches_;
  GroupFolder folder_;  // of storage_, options_
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Tree>> members_;  // by file name
};

// Opens the tree for a folder: an array, or a group. Shared by OpenTree and
// group members.
Result<std::unique_ptr<Tree>> OpenFolder(const std::string& path, const TreeOptions& options,
                                         std::shared_ptr<TreeCaches> caches);

}  // namespace tiledbfs::fusefs
