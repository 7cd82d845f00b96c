#include "core/metadata/query_condition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "core/tile/generic_tile.h"
#include "tests/core/metadata/test_util.h"

namespace tiledbfs::core {
namespace {

using testing::ByteWriter;
using testing::CorpusArray;
using testing::CorpusExpected;
using testing::MakeGenericTile;

template <class T>
ByteVec V(T x) {
  ByteVec b(sizeof(T), 0);
  std::memcpy(b.data(), &x, sizeof(T));
  return b;
}
ByteVec S(std::string_view s) { return ByteVec(s.begin(), s.end()); }

class TestCell : public CellAccessor {
 public:
  TestCell& Set(const std::string& name, Datatype type, ByteVec value, uint32_t cell_val_num = 1,
                bool nullable = false) {
    fields_[name] = ConditionField{type, cell_val_num, nullable, false};
    values_[name] = std::move(value);
    return *this;
  }
  TestCell& Null(const std::string& name) {
    nulls_.insert(name);
    return *this;
  }
  const ConditionField* Field(const std::string& name) const override {
    auto it = fields_.find(name);
    return it == fields_.end() ? nullptr : &it->second;
  }
  Bytes Value(const std::string& name) const override { return values_.at(name); }
  bool IsNull(const std::string& name) const override { return nulls_.count(name) != 0; }

 private:
  std::map<std::string, ConditionField> fields_;
  std::map<std::string, ByteVec> values_;
  std::set<std::string> nulls_;
};

bool Eval(const ConditionNode& n, const CellAccessor& c) {
  auto r = Evaluate(n, c);
  EXPECT_TRUE(r.ok()) << r.error().ToString();
  return r.ok() && *r;
}

ConditionNode Val(const std::string& f, ConditionOp op, ByteVec v) {
  return MakeValueNode(f, op, std::move(v));
}
ConditionNode And(std::vector<ConditionNode> c) {
  return MakeExpressionNode(CombinationOp::kAnd, std::move(c));
}
ConditionNode Or(std::vector<ConditionNode> c) {
  return MakeExpressionNode(CombinationOp::kOr, std::move(c));
}

// Serializes a tree the way TileDB does.
void Serialize(const ConditionNode& n, ByteWriter* w) {
  if (n.is_expression) {
    w->Put<uint8_t>(0).Put<uint8_t>(static_cast<uint8_t>(n.combination));
    w->Put<uint64_t>(n.children.size());
    for (const auto& c : n.children) Serialize(c, w);
    return;
  }
  w->Put<uint8_t>(1).Put<uint8_t>(static_cast<uint8_t>(n.op));
  w->Put<uint32_t>(static_cast<uint32_t>(n.field.size())).PutString(n.field);
  w->Put<uint64_t>(n.value.size()).PutBytes(Bytes(n.value));
  if (n.op == ConditionOp::kIn || n.op == ConditionOp::kNotIn) {
    w->Put<uint64_t>(n.offsets.size() * 8);
    for (uint64_t o : n.offsets) w->Put<uint64_t>(o);
  }
}

FieldTypeFn Types(std::map<std::string, Datatype> m) {
  return [m](const std::string& f) -> std::optional<Datatype> {
    auto it = m.find(f);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

// ---- corpus ----

std::string DeleteFile() {
  return "__commits/__1700000003000_1700000003000_7e332c5b5dbdf4325e664903f1d42a84_22.del";
}

TEST(ConditionCorpusTest, DeleteFileHoldsTheNegationOfACondition) {
  auto storage = LocalStorage::Open(CorpusArray("deletes"));
  ASSERT_TRUE(storage.ok());
  auto tile = ReadGenericTile(**storage, DeleteFile(), 0, nullptr, DefaultLimits());
  ASSERT_TRUE(tile.ok()) << tile.error().ToString();
  auto stored = ParseCondition(tile->data, 0, DefaultLimits());
  ASSERT_TRUE(stored.ok()) << stored.error().ToString();
  auto types = Types({{"a", Datatype::kInt32}});
  EXPECT_EQ(ConditionToText(*stored, types), "a >= 5");

  auto user = LoadDeleteCondition(**storage, DeleteFile(), nullptr, DefaultLimits());
  ASSERT_TRUE(user.ok()) << user.error().ToString();
  EXPECT_EQ(ConditionToText(*user, types), "a < 5");
  EXPECT_EQ(ConditionToText(*user), "a < 0x05000000");  // no schema: raw bytes

  // Every strict prefix of the real condition is rejected.
  for (size_t n = 0; n < tile->data.size(); ++n) {
    auto p = ParseCondition(Bytes(tile->data).first(n), 0, DefaultLimits());
    ASSERT_FALSE(p.ok()) << n;
    EXPECT_EQ(p.error().code(), ErrorCode::kCorrupt);
  }

  // The same bytes through DecodeDeleteCondition (as embedded in a .con file).
  auto raw = (*storage)->ReadAll(DeleteFile());
  ASSERT_TRUE(raw.ok());
  auto decoded = DecodeDeleteCondition(*raw, DeleteFile(), 0, nullptr, DefaultLimits());
  ASSERT_TRUE(decoded.ok()) << decoded.error().ToString();
  EXPECT_EQ(ConditionToText(*decoded, types), "a < 5");
}

std::vector<int32_t> ReadInts(const std::string& path) {
  std::string s = testing::ReadText(path);
  std::vector<int32_t> v(s.size() / 4);
  std::memcpy(v.data(), s.data(), v.size() * 4);
  return v;
}

using Cell = std::tuple<int32_t, int32_t, int32_t>;  // r, c, a

std::multiset<Cell> ViewCells(const std::string& t) {
  std::string dir = CorpusExpected("deletes") + "/views/" + t;
  auto r = ReadInts(dir + "/r.data"), c = ReadInts(dir + "/c.data"), a = ReadInts(dir + "/a.data");
  std::multiset<Cell> out;
  for (size_t i = 0; i < a.size(); ++i) out.emplace(r[i], c[i], a[i]);
  return out;
}

TEST(ConditionCorpusTest, DeletingMatchesTileDBsView) {
  auto storage = LocalStorage::Open(CorpusArray("deletes"));
  ASSERT_TRUE(storage.ok());
  auto cond = LoadDeleteCondition(**storage, DeleteFile(), nullptr, DefaultLimits());
  ASSERT_TRUE(cond.ok());
  std::multiset<Cell> before = ViewCells("1700000002000");
  std::multiset<Cell> after = ViewCells("1700000003000");
  ASSERT_EQ(before.size(), 30u);
  std::multiset<Cell> kept;
  int deleted = 0;
  for (const Cell& cell : before) {
    TestCell tc;
    tc.Set("r", Datatype::kInt32, V(std::get<0>(cell)))
        .Set("c", Datatype::kInt32, V(std::get<1>(cell)))
        .Set("a", Datatype::kInt32, V(std::get<2>(cell)));
    auto d = IsDeletedBy(*cond, tc);
    ASSERT_TRUE(d.ok()) << d.error().ToString();
    EXPECT_EQ(*d, std::get<2>(cell) < 5);
    if (*d) {
      ++deleted;
    } else {
      kept.insert(cell);
    }
  }
  EXPECT_GT(deleted, 0);
  EXPECT_EQ(kept, after);
}

// ---- parser ----

TEST(ConditionParseTest, RoundTripsATreeWithSets) {
  auto in = MakeSetNode("s", ConditionOp::kIn, S("bbaccc"), {0, 2, 3});
  ASSERT_TRUE(in.ok());
  ConditionNode tree = Or(
      {And({Val("a", ConditionOp::kLt, V<int32_t>(5)), Val("f", ConditionOp::kGe, V<double>(1.5))}),
       *in});
  ByteWriter w;
  Serialize(tree, &w);
  auto parsed = ParseCondition(w.bytes(), 0, DefaultLimits());
  ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
  auto types =
      Types({{"a", Datatype::kInt32}, {"f", Datatype::kFloat64}, {"s", Datatype::kStringAscii}});
  EXPECT_EQ(ConditionToText(*parsed, types),
            "(a < 5 AND f >= 1.5) OR s IN (\"bb\", \"a\", \"ccc\")");
  for (size_t n = 0; n < w.bytes().size(); ++n) {
    auto p = ParseCondition(Bytes(w.bytes()).first(n), 0, DefaultLimits());
    ASSERT_FALSE(p.ok()) << n;
    EXPECT_EQ(p.error().code(), ErrorCode::kCorrupt);
  }
  ByteVec longer = w.bytes();
  longer.push_back(0);
  auto trailing = ParseCondition(longer, 0, DefaultLimits());
  ASSERT_FALSE(trailing.ok());
  EXPECT_NE(trailing.error().message().find("1 bytes after the condition"), std::string::npos);
}

TEST(ConditionParseTest, BadNodeTypeIsCorruptBadOpsAreUnsupported) {
  {
    ByteWriter w;
    w.Put<uint8_t>(2);
    auto p = ParseCondition(w.bytes(), 7, DefaultLimits());
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(p.error().message().find("offset 7: condition node.node type"), std::string::npos);
  }
  {
    ByteWriter w;
    w.Put<uint8_t>(1).Put<uint8_t>(9).Put<uint32_t>(1).PutString("a").Put<uint64_t>(0);
    auto p = ParseCondition(w.bytes(), 0, DefaultLimits());
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().code(), ErrorCode::kUnsupported);
    EXPECT_NE(p.error().message().find("offset 1: condition node.op: unknown query condition op 9"),
              std::string::npos)
        << p.error().message();
  }
  {
    ByteWriter w;
    w.Put<uint8_t>(0).Put<uint8_t>(3).Put<uint64_t>(0);
    auto p = ParseCondition(w.bytes(), 0, DefaultLimits());
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().code(), ErrorCode::kUnsupported);
    EXPECT_NE(p.error().message().find("combination op"), std::string::npos);
  }
}

TEST(ConditionParseTest, HostileCountsLengthsAndDepthAllocateNothing) {
  {
    ByteWriter w;
    w.Put<uint8_t>(0).Put<uint8_t>(0).Put<uint64_t>(UINT64_MAX);
    auto p = ParseCondition(w.bytes(), 0, DefaultLimits());
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(p.error().message().find("cannot fit"), std::string::npos);
  }
  {
    ByteWriter w;
    w.Put<uint8_t>(1).Put<uint8_t>(4).Put<uint32_t>(1).PutString("a").Put<uint64_t>(UINT64_MAX);
    auto p = ParseCondition(w.bytes(), 0, DefaultLimits());
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.error().message().find("condition node.value: need"), std::string::npos);
  }
  {
    ByteWriter w;  // IN with an offsets length that is not a multiple of 8
    w.Put<uint8_t>(1).Put<uint8_t>(6).Put<uint32_t>(1).PutString("a").Put<uint64_t>(1).PutString(
        "x");
    w.Put<uint64_t>(12);
    auto p = ParseCondition(w.bytes(), 0, DefaultLimits());
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(p.error().message().find("not a multiple of 8"), std::string::npos);
  }
  {
    ByteWriter w;  // IN with an offset past the members
    w.Put<uint8_t>(1).Put<uint8_t>(6).Put<uint32_t>(1).PutString("a").Put<uint64_t>(1).PutString(
        "x");
    w.Put<uint64_t>(8).Put<uint64_t>(5);
    auto p = ParseCondition(w.bytes(), 0, DefaultLimits());
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.error().message().find("past the 1 value bytes"), std::string::npos);
  }
  {
    ByteWriter w;  // 100000 nested expression nodes: refused, not a stack overflow
    for (int i = 0; i < 100000; ++i) w.Put<uint8_t>(0).Put<uint8_t>(0).Put<uint64_t>(1);
    auto p = ParseCondition(w.bytes(), 0, DefaultLimits());
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.error().message().find("nested deeper than 512"), std::string::npos);
    // The cap is the caller's Limits::max_condition_depth.
    Limits shallow;
    shallow.max_condition_depth = 8;
    auto capped = ParseCondition(w.bytes(), 0, shallow);
    ASSERT_FALSE(capped.ok());
    EXPECT_NE(capped.error().message().find("nested deeper than 8"), std::string::npos);
  }
}

TEST(ConditionParseTest, UpdateCommit) {
  ByteWriter w;
  Serialize(Val("a", ConditionOp::kGe, V<int32_t>(5)), &w);  // stored: negation of a < 5
  w.Put<uint64_t>(2);
  w.Put<uint64_t>(1).PutString("a").Put<uint64_t>(4).Put<int32_t>(0);
  w.Put<uint64_t>(1).PutString("b").Put<uint64_t>(3).PutString("new");
  auto u = ParseUpdateCommit(w.bytes(), 0, DefaultLimits());
  ASSERT_TRUE(u.ok()) << u.error().ToString();
  ASSERT_EQ(u->values.size(), 2u);
  EXPECT_EQ(u->values[0], (UpdateValue{"a", V<int32_t>(0)}));
  EXPECT_EQ(u->values[1], (UpdateValue{"b", S("new")}));
  for (size_t n = 0; n < w.bytes().size(); ++n) {
    auto p = ParseUpdateCommit(Bytes(w.bytes()).first(n), 0, DefaultLimits());
    ASSERT_FALSE(p.ok()) << n;
    EXPECT_EQ(p.error().code(), ErrorCode::kCorrupt);
  }
  ByteWriter hostile;
  Serialize(Val("a", ConditionOp::kGe, V<int32_t>(5)), &hostile);
  hostile.Put<uint64_t>(UINT64_MAX);
  auto h = ParseUpdateCommit(hostile.bytes(), 0, DefaultLimits());
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message().find("cannot fit"), std::string::npos);

  MemoryStorage s;
  s.Put("__commits/__5_5_11111111111111111111111111111111_22.upd", MakeGenericTile(w.bytes()));
  auto loaded = LoadUpdateCommit(s, "__commits/__5_5_11111111111111111111111111111111_22.upd",
                                 nullptr, DefaultLimits());
  ASSERT_TRUE(loaded.ok()) << loaded.error().ToString();
  EXPECT_EQ(ConditionToText(loaded->condition, Types({{"a", Datatype::kInt32}})), "a < 5");
  ByteVec tile = MakeGenericTile(w.bytes());
  auto decoded = DecodeUpdateCommit(tile, "__commits/x.con", 40, nullptr, DefaultLimits());
  ASSERT_TRUE(decoded.ok()) << decoded.error().ToString();
  EXPECT_EQ(decoded->values.size(), 2u);
  EXPECT_EQ(ConditionToText(decoded->condition, Types({{"a", Datatype::kInt32}})), "a < 5");
}

TEST(ConditionParseTest, NegationIsExactAndRefusesNot) {
  ConditionNode tree =
      Or({And({Val("a", ConditionOp::kLt, V<int32_t>(5)), Val("b", ConditionOp::kEq, S("x"))}),
          Val("c", ConditionOp::kAlwaysTrue, {})});
  auto neg = NegateCondition(tree);
  ASSERT_TRUE(neg.ok());
  auto types = Types({{"a", Datatype::kInt32}, {"b", Datatype::kStringUtf8}});
  EXPECT_EQ(ConditionToText(*neg, types), "(a >= 5 OR b != \"x\") AND c ALWAYS_FALSE");
  auto back = NegateCondition(*neg);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(ConditionToText(*back, types), ConditionToText(tree, types));
  ConditionNode not_tree =
      MakeExpressionNode(CombinationOp::kNot, {Val("a", ConditionOp::kLt, V<int32_t>(5))});
  EXPECT_EQ(ConditionToText(not_tree, types), "NOT (a < 5)");
  auto not_node = NegateCondition(not_tree);
  ASSERT_FALSE(not_node.ok());
  EXPECT_EQ(not_node.error().code(), ErrorCode::kUnsupported);
}

TEST(ConditionTextTest, ValuesByType) {
  auto types = Types({{"i8", Datatype::kInt8},
                      {"u64", Datatype::kUInt64},
                      {"f", Datatype::kFloat32},
                      {"t", Datatype::kDatetimeMs},
                      {"s", Datatype::kStringUtf8}});
  EXPECT_EQ(ConditionToText(Val("i8", ConditionOp::kEq, V<int8_t>(-3)), types), "i8 == -3");
  EXPECT_EQ(ConditionToText(Val("u64", ConditionOp::kGt, V<uint64_t>(UINT64_MAX)), types),
            "u64 > 18446744073709551615");
  EXPECT_EQ(ConditionToText(Val("f", ConditionOp::kLe, V<float>(0.1f)), types), "f <= 0.1");
  EXPECT_EQ(ConditionToText(Val("t", ConditionOp::kNe, V<int64_t>(1700000000123)), types),
            "t != 1700000000123");
  EXPECT_EQ(ConditionToText(Val("s", ConditionOp::kEq, S("q\"\\\n\x01")), types),
            "s == \"q\\\"\\\\\\n\\x01\"");
  // A value of the wrong size for its type prints raw.
  EXPECT_EQ(ConditionToText(Val("u64", ConditionOp::kEq, V<int32_t>(1)), types),
            "u64 == 0x01000000");
  auto notin = MakeSetNode("i8", ConditionOp::kNotIn, ByteVec{1, 2}, {0, 1});
  ASSERT_TRUE(notin.ok());
  EXPECT_EQ(ConditionToText(*notin, types), "i8 NOT IN (1, 2)");
}

// ---- evaluation semantics ----

TEST(ConditionEvalTest, SignedUnsignedAndFloat) {
  TestCell c;
  c.Set("i", Datatype::kInt32, V<int32_t>(-1))
      .Set("u", Datatype::kUInt32, V<uint32_t>(0xFFFFFFFFu))
      .Set("f", Datatype::kFloat64, V<double>(std::nan("")))
      .Set("z", Datatype::kFloat32, V<float>(-0.0f))
      .Set("t", Datatype::kDatetimeDay, V<int64_t>(std::numeric_limits<int64_t>::min()))
      .Set("b", Datatype::kBool, V<uint8_t>(1));
  EXPECT_TRUE(Eval(Val("i", ConditionOp::kLt, V<int32_t>(1)), c));
  EXPECT_TRUE(Eval(Val("u", ConditionOp::kGt, V<uint32_t>(1)), c));
  EXPECT_FALSE(Eval(Val("f", ConditionOp::kEq, V<double>(std::nan(""))), c));
  EXPECT_TRUE(Eval(Val("f", ConditionOp::kNe, V<double>(std::nan(""))), c));
  EXPECT_FALSE(Eval(Val("f", ConditionOp::kLt, V<double>(1)), c));
  EXPECT_FALSE(Eval(Val("f", ConditionOp::kGe, V<double>(1)), c));
  EXPECT_TRUE(Eval(Val("z", ConditionOp::kEq, V<float>(0.0f)), c));
  EXPECT_TRUE(Eval(Val("t", ConditionOp::kLt, V<int64_t>(0)), c));
  EXPECT_TRUE(Eval(Val("b", ConditionOp::kEq, V<uint8_t>(1)), c));
  // Set membership is byte-wise: -0.0 is not IN (0.0).
  auto in = MakeSetNode("z", ConditionOp::kIn, V<float>(0.0f), {0});
  ASSERT_TRUE(in.ok());
  EXPECT_FALSE(Eval(*in, c));
}

TEST(ConditionEvalTest, StringsCompareByteWise) {
  TestCell c;
  c.Set("s", Datatype::kStringAscii, S("ab"), kVarNum)
      .Set("u", Datatype::kStringUtf8, S("\xc3\xa9"), kVarNum)
      .Set("e", Datatype::kStringAscii, S(""), kVarNum)
      .Set("fixed", Datatype::kStringAscii, ByteVec{'a', 'b', 0, 0}, 4)
      .Set("ch", Datatype::kChar, ByteVec{0x80, 'z'}, 2);
  EXPECT_TRUE(Eval(Val("s", ConditionOp::kGt, S("a")), c));  // longer after its prefix
  EXPECT_TRUE(Eval(Val("s", ConditionOp::kLt, S("b")), c));
  EXPECT_TRUE(Eval(Val("s", ConditionOp::kLt, S("abc")), c));
  EXPECT_FALSE(Eval(Val("s", ConditionOp::kEq, S("abc")), c));
  EXPECT_TRUE(Eval(Val("s", ConditionOp::kNe, S("a")), c));
  EXPECT_TRUE(Eval(Val("u", ConditionOp::kGt, S("z")), c));  // 0xc3 > 'z' unsigned
  EXPECT_TRUE(Eval(Val("e", ConditionOp::kEq, S("")), c));
  EXPECT_TRUE(Eval(Val("e", ConditionOp::kLt, S("a")), c));
  // A fixed-size string cell compares with its padding.
  EXPECT_FALSE(Eval(Val("fixed", ConditionOp::kEq, S("ab")), c));
  EXPECT_TRUE(Eval(Val("fixed", ConditionOp::kEq, ByteVec{'a', 'b', 0, 0}), c));
  // Fixed CHAR: first byte only, as a signed char (0x80 is negative).
  EXPECT_TRUE(Eval(Val("ch", ConditionOp::kLt, S("A")), c));
  EXPECT_TRUE(Eval(Val("ch", ConditionOp::kEq, ByteVec{0x80, 'q'}), c));
  auto in = MakeSetNode("s", ConditionOp::kIn, S("xabab"), {0, 1, 3});
  ASSERT_TRUE(in.ok());
  EXPECT_TRUE(Eval(*in, c));
  auto notin = MakeSetNode("s", ConditionOp::kNotIn, S("xabab"), {0, 1, 3});
  ASSERT_TRUE(notin.ok());
  EXPECT_FALSE(Eval(*notin, c));
  auto empty_set = MakeSetNode("s", ConditionOp::kIn, {}, {});
  ASSERT_TRUE(empty_set.ok());
  EXPECT_FALSE(Eval(*empty_set, c));
}

TEST(ConditionEvalTest, NullsAndMissingFields) {
  TestCell c;
  c.Set("n", Datatype::kInt32, V<int32_t>(0), 1, /*nullable=*/true).Null("n");
  c.Set("a", Datatype::kInt32, V<int32_t>(1));
  // A null cell satisfies nothing: neither a comparison nor its negation.
  EXPECT_FALSE(Eval(Val("n", ConditionOp::kEq, V<int32_t>(0)), c));
  EXPECT_FALSE(Eval(Val("n", ConditionOp::kNe, V<int32_t>(0)), c));
  EXPECT_FALSE(Eval(Val("n", ConditionOp::kAlwaysTrue, {}), c));
  auto in = MakeSetNode("n", ConditionOp::kNotIn, V<int32_t>(5), {0});
  ASSERT_TRUE(in.ok());
  EXPECT_FALSE(Eval(*in, c));
  // ... so a delete whose field is null deletes the cell (TileDB keeps cells
  // where the stored negation holds).
  auto del = IsDeletedBy(Val("n", ConditionOp::kLt, V<int32_t>(5)), c);
  ASSERT_TRUE(del.ok());
  EXPECT_TRUE(*del);
  // A field the fragment lacks: false, and it clears an OR accumulated so far.
  EXPECT_FALSE(Eval(Val("gone", ConditionOp::kEq, V<int32_t>(1)), c));
  EXPECT_FALSE(Eval(
      Or({Val("a", ConditionOp::kEq, V<int32_t>(1)), Val("gone", ConditionOp::kEq, V<int32_t>(1))}),
      c));
  EXPECT_TRUE(Eval(
      Or({Val("gone", ConditionOp::kEq, V<int32_t>(1)), Val("a", ConditionOp::kEq, V<int32_t>(1))}),
      c));
}

TEST(ConditionEvalTest, CombinationsFollowTileDBsBitmaps) {
  TestCell c;
  c.Set("a", Datatype::kInt32, V<int32_t>(3)).Set("b", Datatype::kInt32, V<int32_t>(7));
  auto a_lt5 = Val("a", ConditionOp::kLt, V<int32_t>(5));
  auto b_lt5 = Val("b", ConditionOp::kLt, V<int32_t>(5));
  auto a_gt5 = Val("a", ConditionOp::kGt, V<int32_t>(5));
  EXPECT_FALSE(Eval(And({a_lt5, b_lt5}), c));
  EXPECT_TRUE(Eval(Or({a_lt5, b_lt5}), c));
  EXPECT_TRUE(Eval(Or({And({a_lt5, Val("b", ConditionOp::kGt, V<int32_t>(5))}), b_lt5}), c));
  EXPECT_FALSE(Eval(And({Or({a_gt5, b_lt5}), a_lt5}), c));
  // TileDB ANDs an OR node into its parent's bitmap even when the parent is
  // an OR (whose bitmap starts at 0), so an OR directly inside an OR counts
  // for nothing, or even clears what came before it. (TileDB's combine()
  // flattens such trees, so it never writes them.)
  EXPECT_FALSE(Eval(Or({a_lt5, Or({a_gt5, b_lt5})}), c));
  EXPECT_FALSE(Eval(Or({Or({a_gt5, a_lt5}), b_lt5}), c));
  EXPECT_TRUE(Eval(Or({Or({a_gt5, a_lt5}), a_lt5}), c));
  auto not_node = MakeExpressionNode(CombinationOp::kNot, {a_lt5});
  auto r = Evaluate(not_node, c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  // IsDeletedBy == !Evaluate(negation) on every combination above.
  for (const ConditionNode& n :
       {And({a_lt5, b_lt5}), Or({a_lt5, b_lt5}), Or({And({a_gt5, b_lt5}), a_lt5})}) {
    auto neg = NegateCondition(n);
    ASSERT_TRUE(neg.ok());
    auto d = IsDeletedBy(n, c);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, !Eval(*neg, c));
  }
}

TEST(ConditionEvalTest, IncomparableTypesAndSizes) {
  TestCell c;
  c.Set("blob", Datatype::kBlob, S("xx"), kVarNum).Set("a", Datatype::kInt32, V<int32_t>(1));
  auto r = Evaluate(Val("blob", ConditionOp::kEq, S("xx")), c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  auto size = Evaluate(Val("a", ConditionOp::kEq, V<int64_t>(1)), c);
  ASSERT_FALSE(size.ok());
  EXPECT_EQ(size.error().code(), ErrorCode::kInvalidArgument);
}

TEST(ConditionEvalTest, CheckAgainstASchema) {
  TestCell schema;
  schema.Set("a", Datatype::kInt32, {}).Set("s", Datatype::kStringAscii, {}, kVarNum);
  schema.Set("v", Datatype::kInt32, {}, kVarNum).Set("p", Datatype::kInt16, {}, 2);
  schema.Set("blob", Datatype::kBlob, {});
  EXPECT_TRUE(CheckCondition(Val("a", ConditionOp::kLt, V<int32_t>(5)), schema).ok());
  EXPECT_TRUE(CheckCondition(Val("s", ConditionOp::kLt, S("anything")), schema).ok());
  auto expect_bad = [&](const ConditionNode& n, const std::string& what) {
    Status st = CheckCondition(n, schema);
    ASSERT_FALSE(st.ok()) << what;
    EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(st.error().message().find(what), std::string::npos) << st.error().message();
  };
  expect_bad(Val("nope", ConditionOp::kLt, V<int32_t>(5)), "no such field");
  expect_bad(Val("a", ConditionOp::kLt, V<int64_t>(5)), "value of 8 bytes for 4-byte cells");
  expect_bad(Val("a", ConditionOp::kNe, {}), "value of 0 bytes");
  expect_bad(Val("v", ConditionOp::kLt, V<int32_t>(5)), "var-sized INT32");
  expect_bad(Val("p", ConditionOp::kLt, V<int16_t>(5)), "2 values per cell");
  expect_bad(Val("blob", ConditionOp::kEq, S("x")), "BLOB values cannot be compared");
  expect_bad(And({Val("a", ConditionOp::kLt, V<int32_t>(5))}), "at least 2 needed");
  auto bad_set = MakeSetNode("a", ConditionOp::kIn, S("abcdef"), {0, 4});
  ASSERT_TRUE(bad_set.ok());
  expect_bad(*bad_set, "set member of 2 bytes");
}

}  // namespace
}  // namespace tiledbfs::core
