// Delete and update conditions: __commits/<timestamped name>.del and .upd,
// one generic tile each (a .con file may also embed such tiles), holding a
// serialized query condition tree; an update adds a list of field values.
// Spec: format_spec/delete_commit_file.md, format_spec/update_commit_file.md;
// TileDB's deletes_and_updates/serialization.cc, query/ast/query_ast.cc and
// query/query_condition.cc are the reference where the spec is silent.
//
// Node (recursive):
//   type      field                  present
//   uint8     node type              0 expression, 1 value
//   -- expression node --
//   uint8     combination op         AND 0, OR 1, NOT 2
//   uint64    number of children     (the spec's table forgets its width)
//   Node[]    children
//   -- value node --
//   uint8     op                     LT 0, LE 1, GT 2, GE 3, EQ 4, NE 5, IN 6,
//                                    NOT_IN 7, ALWAYS_TRUE 253, ALWAYS_FALSE 254
//   uint32    field name length
//   uint8[]   field name
//   uint64    value length
//   uint8[]   value                  IN/NOT_IN: the members concatenated
//   uint64    offsets length         IN/NOT_IN only (bytes, a multiple of 8)
//   uint64[]  offsets                IN/NOT_IN only: start of each member
//
// Update file: the condition, then
//   uint64    number of values
//   per value: uint64 field name length, field name, uint64 value length, value
//
// IMPORTANT: TileDB stores the NEGATION of the condition the user wrote
// (DeletesAndUpdates::dowork serializes condition.negated_condition()): for
// `DELETE WHERE a < 5` the file holds `a >= 5`, the condition a cell must
// satisfy to survive. ParseCondition returns the tree as stored;
// LoadDeleteCondition / LoadUpdateCommit return the user's condition (the
// stored one negated back: negation is exact, ops flip LT<->GE, LE<->GT,
// EQ<->NE, IN<->NOT_IN, ALWAYS_TRUE<->ALWAYS_FALSE and AND<->OR).
//
// Evaluation follows TileDB's sparse readers (apply_tree_sparse) cell by
// cell, quirks included:
//   - a value node on a field the cell's fragment does not have is false and
//     also clears what the enclosing node had accumulated;
//   - a null cell (nullable field) never satisfies a value node;
//   - integers, floats, datetimes and BOOL compare as numbers of their type
//     (floats with IEEE semantics: NaN never <, ==); STRING_ASCII,
//     STRING_UTF8 and var CHAR compare byte-wise (shorter prefix first,
//     EQ/NE also on length); fixed CHAR compares the first byte as a signed
//     char; IN/NOT_IN look the cell's bytes up among the members;
//   - BLOB, GEOM_*, ANY, UTF16/32, UCS2/4 cannot be compared (kUnsupported);
//   - NOT is not supported by TileDB's evaluator (kUnsupported);
//   - an OR node combines its children and ANDs the result into its parent's
//     accumulator whatever the parent is (as TileDB does).
// A delete condition deletes a cell when the stored (negated) condition is
// false for it: IsDeletedBy. Note that this deletes cells whose compared
// field is null, and every cell of fragments lacking the field, which
// Evaluate(user condition) would not say. Which fragments and cells a delete
// applies to by timestamp (fragment t1 <= delete t1; per-cell timestamps
// for fragments consolidated with timestamps) is the reader's business.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/filters/filter_pipeline.h"
#include "core/format/datatype.h"
#include "core/storage/storage.h"
#include "core/util/bytes.h"
#include "core/util/limits.h"
#include "core/util/result.h"

namespace tiledbfs::core {

enum class ConditionOp : uint8_t {
  kLt = 0,
  kLe = 1,
  kGt = 2,
  kGe = 3,
  kEq = 4,
  kNe = 5,
  kIn = 6,
  kNotIn = 7,
  kAlwaysTrue = 253,
  kAlwaysFalse = 254,
};
enum class CombinationOp : uint8_t { kAnd = 0, kOr = 1, kNot = 2 };

// kUnsupported for bytes TileDB 2.30 does not know ("Invalid Query
// Condition Op"): a later format may add ops.
Result<ConditionOp> ParseConditionOp(uint8_t byte);
Result<CombinationOp> ParseCombinationOp(uint8_t byte);
ConditionOp NegateOp(ConditionOp op);
std::string_view ConditionOpName(ConditionOp op);  // "<", "<=", ..., "IN", "NOT IN"

struct ConditionNode {
  bool is_expression = false;

  // Value node.
  std::string field;
  ConditionOp op = ConditionOp::kEq;
  ByteVec value;                  // comparison value; IN/NOT_IN: members concatenated
  std::vector<uint64_t> offsets;  // IN/NOT_IN: start of each member in `value`
  // IN/NOT_IN: (start, length) of each member in `value`, sorted by member
  // bytes, for binary search. Filled by the parser (MakeSetNode for trees
  // built by hand).
  std::vector<std::pair<uint64_t, uint64_t>> sorted_members;

  // Expression node.
  CombinationOp combination = CombinationOp::kAnd;
  std::vector<ConditionNode> children;

  Bytes member(size_t i) const {  // i-th member in sorted order
    return Bytes(value).subspan(sorted_members[i].first, sorted_members[i].second);
  }
};

// Builders, for tests and conditions made in code.
ConditionNode MakeValueNode(std::string field, ConditionOp op, ByteVec value);
// kInvalidArgument if the offsets decrease or pass the end of `value`.
Result<ConditionNode> MakeSetNode(std::string field, ConditionOp op, ByteVec value,
                                  std::vector<uint64_t> offsets);
ConditionNode MakeExpressionNode(CombinationOp op, std::vector<ConditionNode> children);

// Parses one serialized condition that must fill `bytes` exactly (a .del
// tile's data). Returns the tree as stored (see the header comment).
// Errors: kCorrupt (truncation, a node type other than 0/1, set offsets
// not a multiple of 8, decreasing or past the value, trailing bytes, nesting
// deeper than 512), kUnsupported (unknown op or combination op byte); never
// an allocation from an unchecked length or count.
Result<ConditionNode> ParseCondition(Bytes bytes, uint64_t file_offset, const Limits& limits);

struct UpdateValue {
  std::string field;
  ByteVec value;
  bool operator==(const UpdateValue&) const = default;
};

struct UpdateCommit {
  ConditionNode condition;  // as stored by ParseUpdateCommit; user's from LoadUpdateCommit
  std::vector<UpdateValue> values;
};

// Parses a .upd tile's data: the condition (as stored) and the update values.
Result<UpdateCommit> ParseUpdateCommit(Bytes bytes, uint64_t file_offset, const Limits& limits);

// TileDB's negation (ASTNode::get_negated_tree). kUnsupported for a NOT node
// (TileDB cannot negate it either).
Result<ConditionNode> NegateCondition(const ConditionNode& node);

// Reads the .del file at `path` (one generic tile at offset 0, decrypted with
// `key` if the array is encrypted) and returns the user's delete condition.
// Errors carry `path`.
Result<ConditionNode> LoadDeleteCondition(const Storage& storage, const std::string& path,
                                          const EncryptionKey* key, const Limits& limits);
// The same from a generic tile already in memory (ConditionCommit::contents
// of a commit inside a .con file, starting at `offset` there); `file` names
// it in errors.
Result<ConditionNode> DecodeDeleteCondition(Bytes tile, const std::string& file, uint64_t offset,
                                            const EncryptionKey* key, const Limits& limits);
// An .upd file: the user's condition and the values.
Result<UpdateCommit> LoadUpdateCommit(const Storage& storage, const std::string& path,
                                      const EncryptionKey* key, const Limits& limits);
// The same from a generic tile already in memory (ConditionCommit::contents
// of a commit inside a .con file).
Result<UpdateCommit> DecodeUpdateCommit(Bytes tile, const std::string& file, uint64_t offset,
                                        const EncryptionKey* key, const Limits& limits);

// Text for people: `a < 5`, `s == "x\"y"`, `a IN (1, 2)`, `(a < 5 AND b > 2) OR c != 0`.
// `field_type` gives a field's datatype, to print values; without it (or
// for an unknown field, or a value whose size does not fit the type) values
// print as a quoted string when printable ASCII, else as 0x<hex>.
using FieldTypeFn = std::function<std::optional<Datatype>(const std::string& field)>;
std::string ConditionToText(const ConditionNode& node, const FieldTypeFn& field_type = nullptr);

// A field as the schema of the cell's fragment has it.
struct ConditionField {
  Datatype type = Datatype::kInt32;
  uint32_t cell_val_num = 1;  // kVarNum for var-sized
  bool nullable = false;
  bool has_enumeration = false;

  bool var() const { return cell_val_num == kVarNum; }
};

class FieldResolver {
 public:
  virtual ~FieldResolver() = default;
  // nullptr if there is no such field (dimension or attribute). Called once
  // per value node per cell: make it cheap (no allocation).
  virtual const ConditionField* Field(const std::string& name) const = 0;
};

// One cell, as the evaluator sees it. Implementations must not allocate per
// call; the evaluator itself allocates nothing.
class CellAccessor : public FieldResolver {
 public:
  // The cell's bytes of `name` (fixed-size: the whole cell, cell_val_num
  // values; var-sized: the value). Only asked for fields Field() knows.
  virtual Bytes Value(const std::string& name) const = 0;
  // Only asked for nullable fields.
  virtual bool IsNull(const std::string& name) const = 0;
};

// TileDB's QueryCondition::check against a schema (run on every loaded
// delete/update condition against the latest schema at open): the field
// exists; numeric fields are fixed-size, one value per cell, and the value
// has the type's size; set members of fixed-size fields without an
// enumeration have the cell's size; the type is comparable; expression nodes
// have at least two children. kInvalidArgument naming the field otherwise.
Status CheckCondition(const ConditionNode& node, const FieldResolver& schema);

// The condition as TileDB applies a query condition to one cell: true if the
// cell passes. Errors: kUnsupported (NOT, an incomparable type),
// kInvalidArgument (a value or cell whose size does not fit the type:
// CheckCondition would have said so).
Result<bool> Evaluate(const ConditionNode& node, const CellAccessor& cell);

// Whether the user's delete condition `delete_condition` (as returned by
// LoadDeleteCondition) deletes the cell: TileDB keeps a cell when the stored
// negation holds for it. Evaluates the negation on the fly (no allocation).
Result<bool> IsDeletedBy(const ConditionNode& delete_condition, const CellAccessor& cell);

}  // namespace tiledbfs::core
