// The Parquet writer's pieces: the compact protocol's bytes against the
// spec's examples, and plans whose pages render to exactly the bytes they
// planned. Real readers (DuckDB, hyparquet) read whole files through a
// mount in tests/mount/parquet_clients_test.py.
#include "fusefs/render/parquet.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>

#include "fusefs/render/thrift_compact.h"

namespace tiledbfs::fusefs {
namespace {

using core::Datatype;

std::string Hex(const std::string& s) {
  std::string out;
  for (unsigned char c : s) out += fmt::format("{:02x}", c);
  return out;
}

TEST(ThriftWriterTest, WritesTheCompactProtocol) {
  std::string out;
  ThriftWriter w(out);
  // i32 1 (zigzag 2) in field 1: header 0x15 (delta 1, type 5).
  w.I32(1, 1);
  // Field 20 after 1 is 19 ahead: the long form, type then zigzag id 40.
  w.I64(20, -1);
  w.Bool(21, true).Bool(22, false);
  w.Binary(23, "ab");
  w.BeginList(24, ThriftType::kI32, 3).ListI32(1).ListI32(-2).ListI32(300);
  w.BeginStruct(25).I32(1, 0).EndStruct();
  w.End();
  EXPECT_EQ(Hex(out),
            "1502"          // field 1, i32 1
            "062801"        // field 20 (long form), i64 -1
            "1112"          // fields 21 and 22, true and false
            "18026162"      // field 23, binary "ab"
            "19350203d804"  // field 24, list of 3 i32: 1, -2, 300 (zigzag 600)
            "1c150000"      // field 25, struct {1: 0}
            "00");          // stop
  std::string v;
  ThriftWriter::Varint(v, 300);
  EXPECT_EQ(Hex(v), "ac02");
  EXPECT_EQ(ThriftWriter::VarintSize(300), 2u);
  EXPECT_EQ(ThriftWriter::VarintSize(127), 1u);
}

// A column of n cells of `type` from raw values; var-sized with `sizes`
// (bytes per cell), nullable with `valid`.
core::Column Cells(Datatype type, uint32_t cvn, std::string data, std::vector<uint64_t> sizes = {},
                   std::vector<uint8_t> valid = {}) {
  core::Column c;
  c.type = type;
  c.cell_val_num = cvn;
  c.data.assign(data.begin(), data.end());
  if (cvn == core::kVarNum) {
    c.offsets.push_back(0);
    for (uint64_t s : sizes) c.offsets.push_back(c.offsets.back() + s);
    c.cell_count = sizes.size();
  } else {
    c.cell_count = data.size() / (core::DatatypeSize(type) * cvn);
  }
  if (!valid.empty()) {
    c.nullable = true;
    c.validity.assign(valid.begin(), valid.end());
  }
  return c;
}

template <class T>
std::string Raw(std::vector<T> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// The whole file of a plan, each page from `rows_of(column, first, n)`.
template <class F>
std::string RenderFile(const ParquetPlan& plan, F rows_of) {
  std::string out = "PAR1";
  for (size_t p = 0; p < plan.pages().size(); ++p) {
    const ParquetPlan::Page& page = plan.pages()[p];
    EXPECT_EQ(out.size(), page.start);
    const std::string header = plan.PageHeader(p);
    EXPECT_EQ(page.start + header.size(), page.body);
    out += header;
    const core::Column cells =
        page.dictionary ? core::Column{} : rows_of(page.column, page.first_row, page.rows);
    auto st = plan.AppendPageBody(p, cells, out);
    EXPECT_TRUE(st.ok()) << st.error().message();
    EXPECT_EQ(out.size(), page.end);
  }
  EXPECT_EQ(out.size(), plan.footer_start());
  std::vector<ParquetPlan::MinMax> stats(plan.row_groups().size());
  for (size_t g = 0; g < stats.size() && plan.first_dim_stats(); ++g) {
    const auto& group = plan.row_groups()[g];
    stats[g].min = plan.StatValue(rows_of(0, group.first_row, 1), false);
    stats[g].max = plan.StatValue(rows_of(0, group.first_row + group.rows - 1, 1), true);
  }
  auto footer = plan.Footer(stats);
  EXPECT_TRUE(footer.ok()) << footer.error().message();
  if (footer.ok()) out += *footer;
  return out;
}

// rows of a column: a slice of `all`.
core::Column Slice(const core::Column& all, uint64_t first, uint64_t n) {
  core::Column c = all;
  c.cell_count = n;
  if (all.var()) {
    c.offsets.assign(all.offsets.begin() + first, all.offsets.begin() + first + n + 1);
    const uint64_t base = c.offsets.front();
    for (uint64_t& o : c.offsets) o -= base;
    c.data.assign(all.data.begin() + base, all.data.begin() + all.offsets[first + n]);
  } else {
    const uint64_t size = all.cell_size();
    c.data.assign(all.data.begin() + first * size, all.data.begin() + (first + n) * size);
  }
  if (all.nullable)
    c.validity.assign(all.validity.begin() + first, all.validity.begin() + first + n);
  return c;
}

// The counts a field's cells give, as the layout pass takes them.
ParquetCounts CountsOf(const core::Column& c, uint64_t piece, bool dimension = false,
                       const core::Enumeration* e = nullptr) {
  const ParquetNeeds needs = ParquetNeedsOf(c.type, c.cell_val_num, c.nullable, dimension, e);
  const uint64_t pieces = c.cell_count / piece + (c.cell_count % piece != 0);
  ParquetCounts counts;
  if (needs.valid) counts.valid.assign(pieces + 1, 0);
  if (needs.bytes) counts.bytes.assign(pieces + 1, 0);
  if (needs.empty) counts.empty.assign(pieces + 1, 0);
  const ParquetFlags flags = ParquetCountPieces(c, needs, 0, piece, counts);
  counts.utf8 = flags.utf8;
  counts.labeled = flags.labeled;
  ParquetRunningTotals(counts);
  return counts;
}

TEST(ParquetPlanTest, EveryKindRendersToItsPlannedBytes) {
  constexpr uint64_t kRows = 70000, kPiece = 4096;  // two pages of the first column
  std::vector<core::Column> all;
  std::vector<int64_t> x(kRows);
  for (uint64_t i = 0; i < kRows; ++i) x[i] = static_cast<int64_t>(i) - 5;
  all.push_back(Cells(Datatype::kInt64, 1, Raw(x)));
  std::vector<int8_t> i8(kRows);
  std::vector<uint8_t> valid(kRows), flags(kRows);
  std::string text;
  std::vector<uint64_t> sizes(kRows), list_sizes(kRows);
  std::string list;
  for (uint64_t i = 0; i < kRows; ++i) {
    i8[i] = static_cast<int8_t>(i * 7);
    valid[i] = i % 3 != 0;
    flags[i] = i % 5 == 0;
    const std::string s = i % 11 == 0 ? "" : fmt::format("v{}", i);
    text += s;
    sizes[i] = s.size();
    const int16_t n = static_cast<int16_t>(i % 4);
    for (int16_t k = 0; k < n; ++k) list += Raw(std::vector<int16_t>{static_cast<int16_t>(i + k)});
    list_sizes[i] = 2 * n;
  }
  all.push_back(Cells(Datatype::kInt8, 1, Raw(i8), {}, valid));
  all.push_back(Cells(Datatype::kBool, 1, Raw(flags)));
  all.push_back(Cells(Datatype::kStringUtf8, core::kVarNum, text, sizes, valid));
  all.push_back(Cells(Datatype::kInt16, core::kVarNum, list, list_sizes, valid));
  all.push_back(Cells(Datatype::kUInt8, 1, Raw(std::vector<uint8_t>(kRows, 2))));
  core::Enumeration labels;
  labels.type = Datatype::kStringAscii;
  labels.data = {'r', 'e', 'd', 'b', 'l', 'u', 'e', 'g', 'o'};
  labels.offsets = {0, 3, 7};
  std::vector<ParquetField> fields;
  const char* names[] = {"x", "i8", "flag", "s", "list", "color"};
  for (size_t k = 0; k < all.size(); ++k) {
    all[k].name = names[k];
    ParquetField f;
    f.name = names[k];
    f.type = all[k].type;
    f.cell_val_num = all[k].cell_val_num;
    f.nullable = all[k].nullable;
    f.dimension = k == 0;
    if (k == 5) f.enumeration = &labels;
    f.counts = CountsOf(all[k], kPiece, f.dimension, f.enumeration);
    fields.push_back(std::move(f));
  }
  auto plan = ParquetPlan::Make(fields, kRows, kPiece, {{"k", "v"}}, true);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_TRUE(plan->first_dim_stats());
  EXPECT_EQ(plan->columns()[5].kind, ParquetPlan::Kind::kDictionary);
  EXPECT_EQ(plan->columns()[4].kind, ParquetPlan::Kind::kList);
  EXPECT_EQ(plan->DirectWidth(0), 8u);
  EXPECT_EQ(plan->DirectWidth(1), 0u);  // nullable: levels first
  const std::string file = RenderFile(
      *plan, [&](uint32_t c, uint64_t first, uint64_t n) { return Slice(all[c], first, n); });
  ASSERT_EQ(file.size(), plan->size());
  EXPECT_EQ(file.substr(0, 4), "PAR1");
  EXPECT_EQ(file.substr(file.size() - 4), "PAR1");
  uint32_t footer = 0;
  std::memcpy(&footer, file.data() + file.size() - 8, 4);
  EXPECT_EQ(plan->footer_start() + footer + 8, file.size());
  // The first column's values are its cells as they are (INT64 PLAIN).
  const ParquetPlan::Page& first = plan->pages()[0];
  EXPECT_EQ(file.substr(first.body, 16), Raw(std::vector<int64_t>{-5, -4}));
}

TEST(ParquetPlanTest, CellsThatDoNotFitThePlanAreCorrupt) {
  const core::Column planned =
      Cells(Datatype::kInt32, 1, Raw(std::vector<int32_t>{1, 2, 3}), {}, {1, 0, 1});
  ParquetField f;
  f.name = "a";
  f.nullable = true;
  f.counts = CountsOf(planned, 4096);
  auto plan = ParquetPlan::Make({f}, 3, 4096, {}, false);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  const core::Column other =
      Cells(Datatype::kInt32, 1, Raw(std::vector<int32_t>{1, 2, 3}), {}, {1, 1, 1});
  std::string out;
  auto st = plan->AppendPageBody(0, other, out);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), core::ErrorCode::kCorrupt);
  EXPECT_TRUE(out.empty());  // nothing of another size is handed out
}

TEST(ParquetPlanTest, CountsThatDoNotCoverTheRowsAreRefused) {
  ParquetField f;
  f.name = "s";
  f.type = Datatype::kStringAscii;
  f.cell_val_num = core::kVarNum;
  f.counts.bytes = {0, 10};  // one piece, for rows of two
  auto plan = ParquetPlan::Make({f}, 5000, 4096, {}, false);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code(), core::ErrorCode::kInvalidArgument);
}

TEST(ParquetPlanTest, AnEnumerationIndexPastItsLabelsIsCorrupt) {
  core::Enumeration labels;
  labels.type = Datatype::kStringAscii;
  labels.data = {'a', 'b'};
  labels.offsets = {0, 1};
  ParquetField f;
  f.name = "e";
  f.type = Datatype::kUInt8;
  f.enumeration = &labels;
  f.counts =
      CountsOf(Cells(Datatype::kUInt8, 1, Raw(std::vector<uint8_t>{1, 0})), 4096, false, &labels);
  auto plan = ParquetPlan::Make({f}, 2, 4096, {}, false);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  ASSERT_EQ(plan->pages().size(), 2u);  // the dictionary, then the indices
  std::string out;
  auto st =
      plan->AppendPageBody(1, Cells(Datatype::kUInt8, 1, Raw(std::vector<uint8_t>{1, 2})), out);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), core::ErrorCode::kCorrupt);
  EXPECT_NE(st.error().message().find("index 2 past its 2 labels"), std::string::npos);
  // Counted so, the column shows its indices: data.csv shows one with no
  // label as its integer.
  f.counts =
      CountsOf(Cells(Datatype::kUInt8, 1, Raw(std::vector<uint8_t>{1, 2})), 4096, false, &labels);
  EXPECT_FALSE(f.counts.labeled);
  auto indices = ParquetPlan::Make({f}, 2, 4096, {}, false);
  ASSERT_TRUE(indices.ok()) << indices.error().message();
  EXPECT_EQ(indices->columns()[0].kind, ParquetPlan::Kind::kFixed);
}

TEST(ParquetPlanTest, AnEmptyViewIsAFileOfNoRowGroups) {
  ParquetField f;
  f.name = "x";
  auto plan = ParquetPlan::Make({f}, 0, 4096, {}, true);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_TRUE(plan->pages().empty());
  auto footer = plan->Footer({});
  ASSERT_TRUE(footer.ok()) << footer.error().message();
  EXPECT_EQ(4 + footer->size(), plan->size());
}

}  // namespace
}  // namespace tiledbfs::fusefs
