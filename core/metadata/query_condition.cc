#include "core/metadata/query_condition.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/format/number.h"
#include "core/tile/generic_tile.h"
#include "core/util/byte_reader.h"

namespace tiledbfs::core {
namespace {

// Smallest serialized node: an expression node (type, op, child count).
constexpr uint64_t kMinNodeSize = 1 + 1 + 8;

bool IsSetOp(ConditionOp op) { return op == ConditionOp::kIn || op == ConditionOp::kNotIn; }

int CompareBytes(Bytes a, Bytes b) {
  const size_t n = std::min(a.size(), b.size());
  int c = n == 0 ? 0 : std::memcmp(a.data(), b.data(), n);
  if (c != 0) return c;
  if (a.size() == b.size()) return 0;
  return a.size() < b.size() ? -1 : 1;
}

// Fills node.sorted_members from value/offsets (already validated).
void SortMembers(ConditionNode* node) {
  const uint64_t n = node->offsets.size();
  node->sorted_members.clear();
  node->sorted_members.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t start = node->offsets[i];
    const uint64_t end = i + 1 < n ? node->offsets[i + 1] : node->value.size();
    node->sorted_members.emplace_back(start, end - start);
  }
  const ByteVec& v = node->value;
  std::sort(node->sorted_members.begin(), node->sorted_members.end(),
            [&v](const auto& a, const auto& b) {
              return CompareBytes(Bytes(v).subspan(a.first, a.second),
                                  Bytes(v).subspan(b.first, b.second)) < 0;
            });
}

// Checks set offsets as TileDB's set-membership ASTNodeVal constructor does.
// Returns an empty string when they are fine, else what is wrong.
std::string CheckSetOffsets(const ByteVec& value, const std::vector<uint64_t>& offsets) {
  if (!value.empty() && offsets.empty()) return "members without offsets";
  for (size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] < offsets[i - 1]) {
      return fmt::format("offset {} ({}) is less than the one before ({})", i, offsets[i],
                         offsets[i - 1]);
    }
  }
  if (!offsets.empty() && offsets.back() > value.size()) {
    return fmt::format("last offset {} is past the {} value bytes", offsets.back(), value.size());
  }
  return "";
}

Result<ConditionNode> ParseNode(ByteReader& r, int depth, const Limits& limits) {
  if (depth > limits.max_condition_depth) {
    return r.Corrupt("condition node",
                     fmt::format("nested deeper than {}", limits.max_condition_depth));
  }
  ConditionNode node;
  const uint64_t type_offset = r.offset();
  ASSIGN_OR_RETURN(uint8_t node_type, r.Read<uint8_t>("condition node.node type"));
  if (node_type == 0) {
    node.is_expression = true;
    const uint64_t op_offset = r.offset();
    ASSIGN_OR_RETURN(uint8_t op_byte, r.Read<uint8_t>("condition node.combination op"));
    auto op = ParseCombinationOp(op_byte);
    if (!op.ok()) {
      return Error(op.error().code(), fmt::format("offset {}: condition node.combination op: {}",
                                                  op_offset, op.error().message()));
    }
    node.combination = *op;
    ASSIGN_OR_RETURN(uint64_t count, r.Read<uint64_t>("condition node.number of children"));
    if (count > r.remaining() / kMinNodeSize) {
      return r.Corrupt(
          "condition node.number of children",
          fmt::format("{} children cannot fit in the {} bytes left", count, r.remaining()));
    }
    node.children.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      ASSIGN_OR_RETURN(ConditionNode child, ParseNode(r, depth + 1, limits));
      node.children.push_back(std::move(child));
    }
    return node;
  }
  if (node_type != 1) {
    return Error::Corrupt(fmt::format(
        "offset {}: condition node.node type: {} is neither 0 (expression) nor 1 (value)",
        type_offset, node_type));
  }
  const uint64_t op_offset = r.offset();
  ASSIGN_OR_RETURN(uint8_t op_byte, r.Read<uint8_t>("condition node.op"));
  auto op = ParseConditionOp(op_byte);
  if (!op.ok()) {
    return Error(op.error().code(),
                 fmt::format("offset {}: condition node.op: {}", op_offset, op.error().message()));
  }
  node.op = *op;
  ASSIGN_OR_RETURN(uint32_t name_length, r.Read<uint32_t>("condition node.field name length"));
  ASSIGN_OR_RETURN(node.field, r.ReadString(name_length, "condition node.field name"));
  ASSIGN_OR_RETURN(uint64_t value_length, r.Read<uint64_t>("condition node.value length"));
  ASSIGN_OR_RETURN(Bytes value, r.ReadBytes(value_length, "condition node.value"));
  node.value.assign(value.begin(), value.end());
  if (IsSetOp(node.op)) {
    const uint64_t offsets_offset = r.offset();
    ASSIGN_OR_RETURN(uint64_t offsets_length, r.Read<uint64_t>("condition node.offsets length"));
    if (offsets_length % 8 != 0) {
      return r.Corrupt("condition node.offsets length",
                       fmt::format("{} is not a multiple of 8", offsets_length));
    }
    ASSIGN_OR_RETURN(Bytes offsets, r.ReadBytes(offsets_length, "condition node.offsets"));
    node.offsets.resize(offsets_length / 8);
    if (!offsets.empty()) std::memcpy(node.offsets.data(), offsets.data(), offsets.size());
    std::string bad = CheckSetOffsets(node.value, node.offsets);
    if (!bad.empty()) {
      return Error::Corrupt(
          fmt::format("offset {}: condition node.offsets: {}", offsets_offset, bad));
    }
    SortMembers(&node);
  }
  return node;
}

Result<std::vector<UpdateValue>> ParseUpdateValues(ByteReader& r) {
  ASSIGN_OR_RETURN(uint64_t count, r.Read<uint64_t>("update values.number of values"));
  // Each value holds at least its two lengths.
  if (count > r.remaining() / 16) {
    return r.Corrupt(
        "update values.number of values",
        fmt::format("{} values cannot fit in the {} bytes left", count, r.remaining()));
  }
  std::vector<UpdateValue> values;
  values.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    UpdateValue v;
    ASSIGN_OR_RETURN(uint64_t name_length, r.Read<uint64_t>("update value.field name length"));
    ASSIGN_OR_RETURN(v.field, r.ReadString(name_length, "update value.field name"));
    ASSIGN_OR_RETURN(uint64_t value_length, r.Read<uint64_t>("update value.value length"));
    ASSIGN_OR_RETURN(Bytes value, r.ReadBytes(value_length, "update value.value"));
    v.value.assign(value.begin(), value.end());
    values.push_back(std::move(v));
  }
  return values;
}

// ---- text ----

bool Printable(Bytes b) {
  for (uint8_t c : b) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

std::string Quoted(Bytes b) {
  std::string out = "\"";
  for (uint8_t c : b) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);  // UTF-8 bytes pass through
    }
  }
  out += '"';
  return out;
}

std::string Hex(Bytes b) {
  std::string out = "0x";
  for (uint8_t c : b) out += fmt::format("{:02x}", c);
  return out;
}

template <class T>
std::string Number(Bytes b) {
  T v;
  std::memcpy(&v, b.data(), sizeof(T));
  if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
    return fmt::format("{}", static_cast<int>(v));
  } else {
    return fmt::format("{}", v);
  }
}

std::string FormatValue(Bytes b, std::optional<Datatype> type) {
  if (type.has_value()) {
    const Datatype t = *type;
    if (IsString(t)) return Quoted(b);
    const bool fits = b.size() == DatatypeSize(t);
    if (fits && IsNumber(t)) {
      return VisitNumber(t, [&](auto zero) { return Number<decltype(zero)>(b); });
    }
  }
  if (Printable(b)) return Quoted(b);
  return Hex(b);
}

void AppendText(const ConditionNode& n, const FieldTypeFn& field_type, bool nested,
                std::string* out) {
  if (n.is_expression) {
    if (n.combination == CombinationOp::kNot) {
      *out += "NOT (";
      for (size_t i = 0; i < n.children.size(); ++i) {
        if (i > 0) *out += ", ";
        AppendText(n.children[i], field_type, false, out);
      }
      *out += ')';
      return;
    }
    const char* sep = n.combination == CombinationOp::kAnd ? " AND " : " OR ";
    if (nested) *out += '(';
    for (size_t i = 0; i < n.children.size(); ++i) {
      if (i > 0) *out += sep;
      AppendText(n.children[i], field_type, true, out);
    }
    if (nested) *out += ')';
    return;
  }
  std::optional<Datatype> type;
  if (field_type) type = field_type(n.field);
  *out += n.field;
  if (n.op == ConditionOp::kAlwaysTrue || n.op == ConditionOp::kAlwaysFalse) {
    *out += ' ';
    *out += ConditionOpName(n.op);
    return;
  }
  *out += ' ';
  *out += ConditionOpName(n.op);
  *out += ' ';
  if (IsSetOp(n.op)) {
    *out += '(';
    const uint64_t count = n.offsets.size();
    for (uint64_t i = 0; i < count; ++i) {
      if (i > 0) *out += ", ";
      const uint64_t start = n.offsets[i];
      const uint64_t end = i + 1 < count ? n.offsets[i + 1] : n.value.size();
      *out += FormatValue(Bytes(n.value).subspan(start, end - start), type);
    }
    *out += ')';
    return;
  }
  *out += FormatValue(n.value, type);
}

// ---- evaluation ----

template <class T>
bool CompareAs(ConditionOp op, T l, T r) {
  switch (op) {
    case ConditionOp::kLt:
      return l < r;
    case ConditionOp::kLe:
      return l <= r;
    case ConditionOp::kGt:
      return l > r;
    case ConditionOp::kGe:
      return l >= r;
    case ConditionOp::kEq:
      return l == r;
    case ConditionOp::kNe:
      return l != r;
    case ConditionOp::kAlwaysTrue:
      return true;
    default:
      return false;  // kAlwaysFalse; sets are handled before
  }
}

bool CompareByteStrings(ConditionOp op, Bytes l, Bytes r) {
  switch (op) {
    case ConditionOp::kEq:
      return l.size() == r.size() && CompareBytes(l, r) == 0;
    case ConditionOp::kNe:
      return l.size() != r.size() || CompareBytes(l, r) != 0;
    case ConditionOp::kAlwaysTrue:
      return true;
    case ConditionOp::kAlwaysFalse:
      return false;
    default:
      return CompareAs<int>(op, CompareBytes(l, r), 0);
  }
}

bool InSet(const ConditionNode& n, Bytes cell) {
  auto it =
      std::lower_bound(n.sorted_members.begin(), n.sorted_members.end(), cell,
                       [&n](const std::pair<uint64_t, uint64_t>& m, Bytes c) {
                         return CompareBytes(Bytes(n.value).subspan(m.first, m.second), c) < 0;
                       });
  return it != n.sorted_members.end() &&
         CompareBytes(Bytes(n.value).subspan(it->first, it->second), cell) == 0;
}

enum class Kind { kNumeric, kBytes, kFixedChar, kUnsupported };

// How TileDB's apply_ast_node_sparse compares values of a field.
Kind KindOf(const ConditionField& f) {
  switch (f.type) {
    case Datatype::kStringAscii:
    case Datatype::kStringUtf8:
      return Kind::kBytes;
    case Datatype::kChar:
      return f.var() ? Kind::kBytes : Kind::kFixedChar;
    default:
      return IsNumber(f.type) ? Kind::kNumeric : Kind::kUnsupported;
  }
}

template <class T>
bool Numeric(ConditionOp op, Bytes cell, Bytes value) {
  T l, r;
  std::memcpy(&l, cell.data(), sizeof(T));
  std::memcpy(&r, value.data(), sizeof(T));
  return CompareAs<T>(op, l, r);
}

Result<bool> CompareNumeric(ConditionOp op, Datatype type, Bytes cell, Bytes value,
                            const std::string& field) {
  const uint64_t size = DatatypeSize(type);
  if (cell.size() < size || value.size() != size) {
    return Error::InvalidArgument(
        fmt::format("condition on '{}': a {}-byte value compared with a {}-byte {} cell", field,
                    value.size(), cell.size(), DatatypeName(type)));
  }
  // INT64, datetimes and times as int64_t.
  return VisitNumber(type, [&](auto zero) { return Numeric<decltype(zero)>(op, cell, value); });
}

// The value node's verdict for a cell whose field exists.
Result<bool> CompareCell(const ConditionNode& n, ConditionOp op, const ConditionField& f,
                         const CellAccessor& cell) {
  const Kind kind = KindOf(f);
  if (kind == Kind::kUnsupported) {
    return Error::Unsupported(
        fmt::format("condition on '{}': cannot compare {} values", n.field, DatatypeName(f.type)));
  }
  if (f.nullable && cell.IsNull(n.field)) return false;
  if (op == ConditionOp::kAlwaysTrue) return true;
  if (op == ConditionOp::kAlwaysFalse) return false;
  const Bytes v = cell.Value(n.field);
  if (IsSetOp(op)) {
    const bool in = InSet(n, v);
    return op == ConditionOp::kIn ? in : !in;
  }
  switch (kind) {
    case Kind::kBytes:
      return CompareByteStrings(op, v, n.value);
    case Kind::kFixedChar: {
      if (v.empty()) {
        return Error::InvalidArgument(
            fmt::format("condition on '{}': empty fixed-size CHAR cell", n.field));
      }
      // TileDB compares the first character only, as a (signed) char; an
      // empty condition value reads as NUL.
      const auto l = static_cast<int8_t>(v[0]);
      const auto r = static_cast<int8_t>(n.value.empty() ? 0 : n.value[0]);
      return CompareAs<int8_t>(op, l, r);
    }
    default:
      if (f.var()) {
        return Error::InvalidArgument(
            fmt::format("condition on '{}': var-sized {} values cannot be compared", n.field,
                        DatatypeName(f.type)));
      }
      return CompareNumeric(op, f.type, v, n.value, n.field);
  }
}

// Mirrors apply_tree_sparse for one cell: `acc` is the bitmap bit the node
// combines into, with AND (and_context) or OR. `negated` evaluates the
// negation of the tree without building it.
Result<bool> EvalInto(const ConditionNode& n, const CellAccessor& cell, bool and_context, bool acc,
                      bool negated) {
  if (!n.is_expression) {
    const ConditionField* f = cell.Field(n.field);
    // TileDB clears the whole bitmap for a field the fragment lacks.
    if (f == nullptr) return false;
    const ConditionOp op = negated ? NegateOp(n.op) : n.op;
    ASSIGN_OR_RETURN(bool v, CompareCell(n, op, *f, cell));
    return and_context ? (acc && v) : (acc || v);
  }
  CombinationOp comb = n.combination;
  if (comb == CombinationOp::kNot) {
    return Error::Unsupported("query condition NOT is not supported (as in TileDB)");
  }
  if (negated) comb = comb == CombinationOp::kAnd ? CombinationOp::kOr : CombinationOp::kAnd;
  if (comb == CombinationOp::kAnd) {
    if (and_context) {
      for (const ConditionNode& c : n.children) {
        if (!acc) return false;  // stays false under AND, whatever follows
        ASSIGN_OR_RETURN(acc, EvalInto(c, cell, true, acc, negated));
      }
      return acc;
    }
    bool t = true;
    for (const ConditionNode& c : n.children) {
      if (!t) break;
      ASSIGN_OR_RETURN(t, EvalInto(c, cell, true, t, negated));
    }
    return acc || t;
  }
  // OR: children OR-ed into a fresh accumulator, which is then AND-ed into
  // the parent's, whatever the parent's combination (TileDB does `*=`).
  bool t = false;
  for (const ConditionNode& c : n.children) {
    ASSIGN_OR_RETURN(t, EvalInto(c, cell, false, t, negated));
  }
  return acc && t;
}

Status CheckNode(const ConditionNode& n, const FieldResolver& schema) {
  if (n.is_expression) {
    if (n.children.size() < 2) {
      return Error::InvalidArgument(fmt::format(
          "condition expression node has {} children; at least 2 needed", n.children.size()));
    }
    for (const ConditionNode& c : n.children) TRY(CheckNode(c, schema));
    return Ok();
  }
  const ConditionField* f = schema.Field(n.field);
  if (f == nullptr) {
    return Error::InvalidArgument(fmt::format("condition on '{}': no such field", n.field));
  }
  const bool string_type = f->type == Datatype::kChar || f->type == Datatype::kStringAscii ||
                           f->type == Datatype::kStringUtf8;
  if (f->var() && !string_type) {
    return Error::InvalidArgument(
        fmt::format("condition on '{}': var-sized {} fields cannot be compared", n.field,
                    DatatypeName(f->type)));
  }
  if (!string_type && f->cell_val_num != 1) {
    return Error::InvalidArgument(fmt::format(
        "condition on '{}': {} values per cell; comparisons need one", n.field, f->cell_val_num));
  }
  const uint64_t cell_size = DatatypeSize(f->type) * (f->var() ? 1 : f->cell_val_num);
  const bool skip_size =
      n.op == ConditionOp::kAlwaysTrue || n.op == ConditionOp::kAlwaysFalse || IsSetOp(n.op);
  if (!f->var() && !string_type && !skip_size && n.value.size() != cell_size) {
    return Error::InvalidArgument(
        fmt::format("condition on '{}': value of {} bytes for {}-byte cells", n.field,
                    n.value.size(), cell_size));
  }
  if (!f->var() && !f->has_enumeration && IsSetOp(n.op)) {
    for (const auto& m : n.sorted_members) {
      if (m.second != cell_size) {
        return Error::InvalidArgument(
            fmt::format("condition on '{}': set member of {} bytes for {}-byte cells", n.field,
                        m.second, cell_size));
      }
    }
  }
  if (KindOf(*f) == Kind::kUnsupported) {
    return Error::InvalidArgument(fmt::format("condition on '{}': {} values cannot be compared",
                                              n.field, DatatypeName(f->type)));
  }
  return Ok();
}

Result<GenericTile> ReadTile(const Storage& storage, const std::string& path,
                             const EncryptionKey* key, const Limits& limits) {
  return ReadGenericTile(storage, path, 0, key, limits);
}

}  // namespace

Result<ConditionOp> ParseConditionOp(uint8_t byte) {
  if (byte <= 7 || byte == 253 || byte == 254) return static_cast<ConditionOp>(byte);
  return Error::Unsupported(fmt::format("unknown query condition op {}", byte));
}

Result<CombinationOp> ParseCombinationOp(uint8_t byte) {
  if (byte <= 2) return static_cast<CombinationOp>(byte);
  return Error::Unsupported(fmt::format("unknown query condition combination op {}", byte));
}

ConditionOp NegateOp(ConditionOp op) {
  switch (op) {
    case ConditionOp::kLt:
      return ConditionOp::kGe;
    case ConditionOp::kLe:
      return ConditionOp::kGt;
    case ConditionOp::kGt:
      return ConditionOp::kLe;
    case ConditionOp::kGe:
      return ConditionOp::kLt;
    case ConditionOp::kEq:
      return ConditionOp::kNe;
    case ConditionOp::kNe:
      return ConditionOp::kEq;
    case ConditionOp::kIn:
      return ConditionOp::kNotIn;
    case ConditionOp::kNotIn:
      return ConditionOp::kIn;
    case ConditionOp::kAlwaysTrue:
      return ConditionOp::kAlwaysFalse;
    case ConditionOp::kAlwaysFalse:
      return ConditionOp::kAlwaysTrue;
  }
  return op;
}

std::string_view ConditionOpName(ConditionOp op) {
  switch (op) {
    case ConditionOp::kLt:
      return "<";
    case ConditionOp::kLe:
      return "<=";
    case ConditionOp::kGt:
      return ">";
    case ConditionOp::kGe:
      return ">=";
    case ConditionOp::kEq:
      return "==";
    case ConditionOp::kNe:
      return "!=";
    case ConditionOp::kIn:
      return "IN";
    case ConditionOp::kNotIn:
      return "NOT IN";
    case ConditionOp::kAlwaysTrue:
      return "ALWAYS_TRUE";
    case ConditionOp::kAlwaysFalse:
      return "ALWAYS_FALSE";
  }
  return "?";
}

ConditionNode MakeValueNode(std::string field, ConditionOp op, ByteVec value) {
  ConditionNode n;
  n.field = std::move(field);
  n.op = op;
  n.value = std::move(value);
  return n;
}

Result<ConditionNode> MakeSetNode(std::string field, ConditionOp op, ByteVec value,
                                  std::vector<uint64_t> offsets) {
  if (!IsSetOp(op)) return Error::InvalidArgument("MakeSetNode needs IN or NOT_IN");
  std::string bad = CheckSetOffsets(value, offsets);
  if (!bad.empty()) return Error::InvalidArgument("set offsets: " + bad);
  ConditionNode n = MakeValueNode(std::move(field), op, std::move(value));
  n.offsets = std::move(offsets);
  SortMembers(&n);
  return n;
}

ConditionNode MakeExpressionNode(CombinationOp op, std::vector<ConditionNode> children) {
  ConditionNode n;
  n.is_expression = true;
  n.combination = op;
  n.children = std::move(children);
  return n;
}

Result<ConditionNode> ParseCondition(Bytes bytes, uint64_t file_offset, const Limits& limits) {
  ByteReader r(bytes, file_offset);
  ASSIGN_OR_RETURN(ConditionNode node, ParseNode(r, 0, limits));
  if (!r.empty()) {
    return r.Corrupt("condition", fmt::format("{} bytes after the condition", r.remaining()));
  }
  return node;
}

Result<UpdateCommit> ParseUpdateCommit(Bytes bytes, uint64_t file_offset, const Limits& limits) {
  ByteReader r(bytes, file_offset);
  UpdateCommit out;
  ASSIGN_OR_RETURN(out.condition, ParseNode(r, 0, limits));
  ASSIGN_OR_RETURN(out.values, ParseUpdateValues(r));
  if (!r.empty()) {
    return r.Corrupt("update values",
                     fmt::format("{} bytes after the last update value", r.remaining()));
  }
  return out;
}

Result<ConditionNode> NegateCondition(const ConditionNode& node) {
  ConditionNode out;
  out.is_expression = node.is_expression;
  if (!node.is_expression) {
    out = node;
    out.op = NegateOp(node.op);
    return out;
  }
  if (node.combination == CombinationOp::kNot) {
    return Error::Unsupported("cannot negate a NOT condition (as in TileDB)");
  }
  out.combination =
      node.combination == CombinationOp::kAnd ? CombinationOp::kOr : CombinationOp::kAnd;
  out.children.reserve(node.children.size());
  for (const ConditionNode& c : node.children) {
    ASSIGN_OR_RETURN(ConditionNode nc, NegateCondition(c));
    out.children.push_back(std::move(nc));
  }
  return out;
}

Result<ConditionNode> LoadDeleteCondition(const Storage& storage, const std::string& path,
                                          const EncryptionKey* key, const Limits& limits) {
  ASSIGN_OR_RETURN(GenericTile tile, ReadTile(storage, path, key, limits));
  ASSIGN_OR_RETURN_CTX(ConditionNode stored, ParseCondition(tile.data, 0, limits),
                       path + " (tile data)");
  ASSIGN_OR_RETURN_CTX(ConditionNode user, NegateCondition(stored), path);
  return user;
}

Result<ConditionNode> DecodeDeleteCondition(Bytes tile_bytes, const std::string& file,
                                            uint64_t offset, const EncryptionKey* key,
                                            const Limits& limits) {
  ASSIGN_OR_RETURN(GenericTile tile, DecodeGenericTile(tile_bytes, file, offset, key, limits));
  ASSIGN_OR_RETURN_CTX(ConditionNode stored, ParseCondition(tile.data, 0, limits),
                       fmt::format("{} (tile data at offset {})", file, offset));
  ASSIGN_OR_RETURN_CTX(ConditionNode user, NegateCondition(stored), file);
  return user;
}

Result<UpdateCommit> LoadUpdateCommit(const Storage& storage, const std::string& path,
                                      const EncryptionKey* key, const Limits& limits) {
  ASSIGN_OR_RETURN(GenericTile tile, ReadTile(storage, path, key, limits));
  ASSIGN_OR_RETURN_CTX(UpdateCommit commit, ParseUpdateCommit(tile.data, 0, limits),
                       path + " (tile data)");
  ASSIGN_OR_RETURN_CTX(commit.condition, NegateCondition(commit.condition), path);
  return commit;
}

Result<UpdateCommit> DecodeUpdateCommit(Bytes tile_bytes, const std::string& file, uint64_t offset,
                                        const EncryptionKey* key, const Limits& limits) {
  ASSIGN_OR_RETURN(GenericTile tile, DecodeGenericTile(tile_bytes, file, offset, key, limits));
  ASSIGN_OR_RETURN_CTX(UpdateCommit commit, ParseUpdateCommit(tile.data, 0, limits),
                       fmt::format("{} (tile data at offset {})", file, offset));
  ASSIGN_OR_RETURN_CTX(commit.condition, NegateCondition(commit.condition), file);
  return commit;
}

std::string ConditionToText(const ConditionNode& node, const FieldTypeFn& field_type) {
  std::string out;
  AppendText(node, field_type, false, &out);
  return out;
}

Status CheckCondition(const ConditionNode& node, const FieldResolver& schema) {
  return CheckNode(node, schema);
}

Result<bool> Evaluate(const ConditionNode& node, const CellAccessor& cell) {
  return EvalInto(node, cell, /*and_context=*/true, /*acc=*/true, /*negated=*/false);
}

Result<bool> IsDeletedBy(const ConditionNode& delete_condition, const CellAccessor& cell) {
  ASSIGN_OR_RETURN(bool kept, EvalInto(delete_condition, cell, /*and_context=*/true, /*acc=*/true,
                                       /*negated=*/true));
  return !kept;
}

}  // namespace tiledbfs::core
