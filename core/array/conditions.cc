#include "core/array/conditions.h"

#include <fmt/format.h>

#include <map>

#include "core/metadata/query_condition.h"

namespace tiledbfs::core {
namespace {

// Presents one cell of the sparse reader to the condition evaluator.
class Accessor final : public CellAccessor {
 public:
  explicit Accessor(const CellValues& cell) : cell_(cell) {}

  const ConditionField* Field(const std::string& name) const override {
    const ArraySchema& s = cell_.schema();
    auto it = fields_.find(name);
    if (it != fields_.end()) return it->second ? &*it->second : nullptr;
    std::optional<ConditionField> f;
    int d = s.DimensionIndex(name);
    int a = s.AttributeIndex(name);
    if (d >= 0) {
      f = ConditionField{s.dimensions[d].type, s.dimensions[d].cell_val_num, false, false};
    } else if (a >= 0) {
      const Attribute& at = s.attributes[a];
      f = ConditionField{at.type, at.cell_val_num, at.nullable, at.enumeration_name.has_value()};
    }
    auto [pos, _] = fields_.emplace(name, f);
    return pos->second ? &*pos->second : nullptr;
  }

  Bytes Value(const std::string& name) const override {
    auto v = cell_.Value(name);
    if (!v.ok()) {
      if (!error_) error_ = v.error();
      return {};
    }
    return v->value_or(Bytes());
  }

  bool IsNull(const std::string& name) const override {
    auto v = cell_.Value(name);
    if (!v.ok()) {
      if (!error_) error_ = v.error();
      return true;
    }
    return !v->has_value();
  }

  const std::optional<Error>& error() const { return error_; }

 private:
  const CellValues& cell_;
  mutable std::map<std::string, std::optional<ConditionField>> fields_;
  mutable std::optional<Error> error_;
};

}  // namespace

Result<DeleteRule> LoadDeleteRule(const Array& array, const ConditionCommit& commit) {
  // TileDB 2.30's readers put update (.upd) conditions in the same list as
  // delete conditions and apply them the same way (the update values are
  // never applied on read; array_operations.cc, sparse_index_reader_base.cc),
  // so cells an update matches disappear from reads. We do as TileDB does.
  std::shared_ptr<ConditionNode> node;
  if (commit.is_update) {
    ASSIGN_OR_RETURN(
        UpdateCommit u,
        commit.in_consolidated_file
            ? DecodeUpdateCommit(commit.contents, commit.path, 0, array.key(), array.limits())
            : LoadUpdateCommit(array.storage(), commit.path, array.key(), array.limits()));
    node = std::make_shared<ConditionNode>(std::move(u.condition));
  } else if (commit.in_consolidated_file) {
    ASSIGN_OR_RETURN(ConditionNode n, DecodeDeleteCondition(commit.contents, commit.path, 0,
                                                            array.key(), array.limits()));
    node = std::make_shared<ConditionNode>(std::move(n));
  } else {
    ASSIGN_OR_RETURN(ConditionNode n, LoadDeleteCondition(array.storage(), commit.path, array.key(),
                                                          array.limits()));
    node = std::make_shared<ConditionNode>(std::move(n));
  }
  DeleteRule rule;
  rule.timestamp = commit.name.t1;
  rule.marker = commit.name.name + commit.name.extension;
  std::string path = commit.path;
  rule.matches = [node, path](const CellValues& cell) -> Result<bool> {
    Accessor acc(cell);
    ASSIGN_OR_RETURN_CTX(bool deleted, IsDeletedBy(*node, acc), path);
    if (acc.error()) return acc.error()->WithContext(path);
    return deleted;
  };
  return rule;
}

}  // namespace tiledbfs::core
