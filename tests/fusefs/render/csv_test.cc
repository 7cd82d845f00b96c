#include "fusefs/render/csv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include "core/read/sparse_order.h"
#include "core/util/text.h"
#include "fusefs/render/value_text.h"
#include "tests/fusefs/render/render_test_util.h"

namespace tiledbfs::fusefs {
namespace {

using core::Column;
using core::Datatype;

std::string Field(std::string_view text) {
  std::string out;
  AppendCsvField(out, text);
  return out;
}

TEST(CsvTest, FieldQuotingFollowsRfc4180) {
  EXPECT_EQ(Field("plain"), "plain");
  EXPECT_EQ(Field(""), "\"\"");
  EXPECT_EQ(Field("a,b"), "\"a,b\"");
  EXPECT_EQ(Field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(Field("\""), "\"\"\"\"");
  EXPECT_EQ(Field("line\nbreak"), "\"line\nbreak\"");
  EXPECT_EQ(Field("cr\r"), "\"cr\r\"");
  EXPECT_EQ(Field("tab\there"), "tab\there");  // tabs and spaces are not special
  EXPECT_EQ(Field(" lead"), " lead");
  EXPECT_EQ(Field(std::string_view("nul\0in", 6)), std::string("nul\0in", 6));
  EXPECT_FALSE(CsvNeedsQuotes("x"));
  EXPECT_TRUE(CsvNeedsQuotes(""));
}

Column Strings(std::string name, std::vector<std::optional<std::string>> cells) {
  Column c;
  c.name = std::move(name);
  c.type = Datatype::kStringUtf8;
  c.cell_val_num = core::kVarNum;
  c.nullable = true;
  c.cell_count = cells.size();
  c.offsets.push_back(0);
  for (const auto& s : cells) {
    if (s) c.data.insert(c.data.end(), s->begin(), s->end());
    c.offsets.push_back(c.data.size());
    c.validity.push_back(s ? 1 : 0);
  }
  return c;
}

Column Ints(std::string name, std::vector<int32_t> values) {
  Column c;
  c.name = std::move(name);
  c.type = Datatype::kInt32;
  c.cell_count = values.size();
  c.data.resize(values.size() * 4, 0);
  if (!values.empty()) std::memcpy(c.data.data(), values.data(), c.data.size());
  return c;
}

TEST(CsvTest, RowsWithHeaderNullsAndEmptyStrings) {
  Column x = Ints("x", {1, -2, 30});
  Column s = Strings("s,name", {"", std::nullopt, "q\"uote"});
  auto table = CsvTable::Make({{&x, nullptr}, {&s, nullptr}}, /*header=*/true);
  ASSERT_TRUE(table.ok()) << table.error().message();
  EXPECT_EQ(table->row_count(), 3u);
  std::string out;
  table->AppendHeader(out);
  table->AppendRows(out, 0, 100);
  EXPECT_EQ(out, "x,\"s,name\"\n1,\"\"\n-2,\n30,\"q\"\"uote\"\n");
  out.clear();
  table->AppendRows(out, 1, 2);
  EXPECT_EQ(out, "-2,\n");
  EXPECT_EQ(table->MeasureRows(0, 2), 9u);
  EXPECT_EQ(table->MeasureRows(2, 3), 13u);
}

TEST(CsvTest, TxtHasNoHeader) {
  Column s = Strings("s", {"a", std::nullopt, ""});
  auto table = CsvTable::Make({{&s, nullptr}}, /*header=*/false);
  ASSERT_TRUE(table.ok());
  std::string out;
  table->AppendHeader(out);
  table->AppendRows(out, 0, 3);
  EXPECT_EQ(out, "a\n\n\"\"\n");
  EXPECT_EQ(table->MeasureRows(0, 3), out.size());
}

TEST(CsvTest, EmptyTableIsTheHeader) {
  Column x = Ints("x", {});
  auto table = CsvTable::Make({{&x, nullptr}}, true);
  ASSERT_TRUE(table.ok());
  std::string out;
  table->AppendHeader(out);
  table->AppendRows(out, 0, 100);
  EXPECT_EQ(out, "x\n");
  EXPECT_EQ(table->MeasureRows(0, 0), 0u);
  auto no_header = CsvTable::Make({{&x, nullptr}}, false);
  out.clear();
  no_header->AppendHeader(out);
  EXPECT_EQ(out, "");
}

TEST(CsvTest, MakeRejectsBadColumns) {
  Column x = Ints("x", {1, 2});
  Column y = Ints("y", {1});
  auto r = CsvTable::Make({{&x, nullptr}, {&y, nullptr}}, true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("column 'y' has 1 cells, column 'x' has 2"),
            std::string::npos);
  EXPECT_FALSE(CsvTable::Make({}, true).ok());
  EXPECT_FALSE(CsvTable::Make({{nullptr, nullptr}}, true).ok());
  Column bad = Ints("bad", {1});
  bad.cell_count = 5;
  r = CsvTable::Make({{&bad, nullptr}}, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("column 'bad'"), std::string::npos);
}

// Rendered in blocks of rows, for several block sizes, the file is the
// full render, and each block's measured size is its text's.
void ExpectEveryBlockMatches(const CsvTable& table,
                             std::vector<uint64_t> spacings = {1, 2, 3, 7, 1024}) {
  std::string full;
  table.AppendHeader(full);
  table.AppendRows(full, 0, table.row_count());
  const uint64_t n = table.row_count();
  for (uint64_t rows : spacings) {
    std::string got;
    table.AppendHeader(got);
    for (uint64_t first = 0; first < n; first += rows) {
      const uint64_t last = first + std::min(rows, n - first);
      const size_t at = got.size();
      table.AppendRows(got, first, last);
      ASSERT_EQ(table.MeasureRows(first, last), got.size() - at)
          << "rows " << first << ".." << last;
    }
    ASSERT_EQ(got, full) << "blocks of " << rows << " rows";
  }
}

TEST(CsvTest, StreamingRangesEqualTheFullRender) {
  Column x = Ints("x", {1, 22, 333, 4444, -5, 0, 7});
  Column s = Strings("s", {"a", std::nullopt, "", "x,y", "line\nbreak", "q\"", "z"});
  auto table = CsvTable::Make({{&x, nullptr}, {&s, nullptr}}, true);
  ASSERT_TRUE(table.ok());
  ExpectEveryBlockMatches(*table);
  auto txt = CsvTable::Make({{&s, nullptr}}, false);
  ExpectEveryBlockMatches(*txt);
}

// A text column is scanned for the bytes that quote (, " CR LF) or trim
// (NUL) 16 bytes at a time, then byte by byte: each such byte, at every
// place of a cell and with the cell at every place of those 16-byte blocks,
// is found, and the row is the cell's own field (trailing NULs dropped).
TEST(CsvTest, EverySpecialByteAtEveryPlaceOfATextColumn) {
  const std::string specials(",\"\r\n\0", 5);
  for (char special : specials) {
    for (size_t before = 0; before <= 33; ++before) {
      for (size_t len = 1; len <= 20; ++len) {
        for (size_t at = 0; at < len; ++at) {
          std::string cell(len, 'b');
          cell[at] = special;
          Column s = Strings("s", {std::string(before, 'a'), cell, "tail text past one block"});
          s.nullable = false;
          s.validity.clear();
          auto table = CsvTable::Make({{&s, nullptr}}, false);
          ASSERT_TRUE(table.ok());
          std::string trimmed = cell;
          while (!trimmed.empty() && trimmed.back() == '\0') trimmed.pop_back();
          const std::string want = Field(std::string(before, 'a')) + "\n" + Field(trimmed) + "\n" +
                                   "tail text past one block\n";
          std::string got;
          table->AppendRows(got, 0, 3);
          ASSERT_EQ(got, want) << "byte " << int(special) << " at " << at << " of " << len
                               << " after " << before;
          ASSERT_EQ(table->MeasureRows(0, 3), want.size());
          ASSERT_EQ(table->MeasureRows(1, 2), Field(trimmed).size() + 1);
        }
      }
    }
  }
  // Without any: every cell as it is (an empty one "").
  Column plain = Strings("s", {"", std::string(40, 'x'), "y"});
  auto table = CsvTable::Make({{&plain, nullptr}}, false);
  ASSERT_TRUE(table.ok());
  std::string got;
  table->AppendRows(got, 0, 3);
  EXPECT_EQ(got, "\"\"\n" + std::string(40, 'x') + "\ny\n");
  EXPECT_EQ(table->MeasureRows(0, 3), got.size());
}

std::string Escaped(std::string_view text) {
  std::string out;
  core::AppendUtf8Escaped(out, text);
  return out;
}

// Bytes that are not part of valid UTF-8 are written \xHH (docs/namespace.md
// "Values") on every path: plain var text, text to quote, fixed CHAR cells
// (the fill byte 0x80), a header name, an enumeration label; the measured
// size is the written one, and a sequence split between two cells is two
// errors, not one character.
TEST(CsvTest, BytesNotUtf8AreWrittenAsHexEscapes) {
  Column s = Strings("caf\xe9", {"caf\xe9", "\xC3", "\xA9", "ok \xF0\x9F\x98\x80", "a,\x80",
                                 "\xED\xA0\x80", "\xC0\xAF", "\xF0\x9F\x98"});
  s.nullable = false;
  s.validity.clear();
  Column fixed;
  fixed.name = "c";
  fixed.type = Datatype::kChar;
  fixed.cell_val_num = 2;
  fixed.cell_count = 8;
  const std::string bytes("\x80\x80x\x80\xC3\xA9\0\0\xFF,\x80\x80\xE9\0\x41\x42", 16);
  fixed.data.insert(fixed.data.end(), bytes.begin(), bytes.end());
  auto table = CsvTable::Make({{&s, nullptr}, {&fixed, nullptr}}, true);
  ASSERT_TRUE(table.ok()) << table.error().message();
  std::string got;
  table->AppendHeader(got);
  table->AppendRows(got, 0, 8);
  EXPECT_EQ(got,
            "caf\\xe9,c\n"
            "caf\\xe9,\\x80\\x80\n"
            "\\xc3,x\\x80\n"
            "\\xa9,\xC3\xA9\n"
            "ok \xF0\x9F\x98\x80,\"\"\n"
            "\"a,\\x80\",\"\\xff,\"\n"
            "\\xed\\xa0\\x80,\\x80\\x80\n"
            "\\xc0\\xaf,\\xe9\n"
            "\\xf0\\x9f\\x98,AB\n");
  EXPECT_TRUE(core::ValidUtf8(got));
  EXPECT_EQ(table->MeasureRows(0, 8) + got.find('\n') + 1, got.size());
  ExpectEveryBlockMatches(*table);
  // The same cells without the ones to quote: the plain path.
  Column plain = Strings("p", {"caf\xe9", "\xC3", "\xA9", "\xF0\x9F\x98\x80", "\xE9t\xE9"});
  plain.nullable = false;
  plain.validity.clear();
  auto txt = CsvTable::Make({{&plain, nullptr}}, false);
  ASSERT_TRUE(txt.ok());
  got.clear();
  txt->AppendRows(got, 0, 5);
  EXPECT_EQ(got, "caf\\xe9\n\\xc3\n\\xa9\n\xF0\x9F\x98\x80\n\\xe9t\\xe9\n");
  EXPECT_EQ(txt->MeasureRows(0, 5), got.size());
  // C3 A9 is valid UTF-8, but not split between two cells.
  got.clear();
  txt->AppendRows(got, 1, 3);
  EXPECT_EQ(got, "\\xc3\n\\xa9\n");
  EXPECT_EQ(txt->MeasureRows(1, 3), got.size());
  // Valid across the column, each cell whole: as it is.
  got.clear();
  txt->AppendRows(got, 3, 4);
  EXPECT_EQ(got, "\xF0\x9F\x98\x80\n");
  EXPECT_EQ(txt->MeasureRows(3, 4), got.size());
  // An enumeration's label (the generic path) and AppendCsvField.
  EXPECT_EQ(Field("\xFF\"x"), "\"\\xff\"\"x\"");
  std::string cell;
  AppendCellBytesText(cell, Datatype::kStringAscii, false,
                      core::Bytes(reinterpret_cast<const uint8_t*>("\xE9\0\0"), 3));
  EXPECT_EQ(cell, "\\xe9");
}

// A byte that is not UTF-8 in a text column, at every place of a cell and
// with the cell at every place of the 16-byte blocks NoSpecialBytes scans:
// the cell's field is written escaped, the others as they are.
TEST(CsvTest, EveryNonUtf8ByteAtEveryPlaceOfATextColumn) {
  for (const std::string bad : {"\x80", "\xC3", "\xFF", "\xE2\x82"}) {
    for (size_t before = 0; before <= 33; ++before) {
      for (size_t len = 1; len <= 20; ++len) {
        for (size_t at = 0; at + bad.size() <= len; ++at) {
          std::string cell(len, 'b');
          cell.replace(at, bad.size(), bad);
          Column s = Strings("s", {std::string(before, 'a'), cell, "tail text past one block"});
          s.nullable = false;
          s.validity.clear();
          auto table = CsvTable::Make({{&s, nullptr}}, false);
          ASSERT_TRUE(table.ok());
          const std::string want = Field(std::string(before, 'a')) + "\n" + Escaped(cell) + "\n" +
                                   "tail text past one block\n";
          std::string got;
          table->AppendRows(got, 0, 3);
          ASSERT_EQ(got, want) << at << " of " << len << " after " << before;
          ASSERT_EQ(table->MeasureRows(0, 3), want.size());
          ASSERT_EQ(table->MeasureRows(1, 2), Escaped(cell).size() + 1);
        }
      }
    }
  }
}

// Short plain values are copied 16 bytes at a time when the column's data
// holds 16 bytes from the value's start, else byte-exact: values of every
// length from 0 to 40 followed by 0 to 40 bytes of other values (so both
// ways, longer values, and the switches between them), after a number
// column and before one.
TEST(CsvTest, ShortPlainTextOfEveryLengthAndDistanceFromTheEnd) {
  for (size_t len = 0; len <= 40; ++len) {
    for (size_t tail = 0; tail <= 40; ++tail) {
      std::string value;
      for (size_t k = 0; k < len; ++k) value += static_cast<char>('a' + k);
      Column s = Strings("s", {value, std::string(tail, 'z')});
      s.nullable = false;
      s.validity.clear();
      Column x = Ints("x", {-7, 123456789});
      Column y = Ints("y", {0, 42});
      auto table = CsvTable::Make({{&x, nullptr}, {&s, nullptr}, {&y, nullptr}}, false);
      ASSERT_TRUE(table.ok());
      const std::string want =
          "-7," + Field(value) + ",0\n123456789," + Field(std::string(tail, 'z')) + ",42\n";
      std::string got = "prefix";
      table->AppendRows(got, 0, 2);
      ASSERT_EQ(got, "prefix" + want) << len << " then " << tail;
      ASSERT_EQ(table->MeasureRows(0, 2), want.size());
    }
  }
}

// Emit copies an integer's text from the row before when the value
// repeats: for every integer type, runs of repeats (of the extremes too),
// broken by nulls and by other values, in a column alone (rows as narrow as
// 2 bytes, the copy's source overlapping where it writes) and beside
// another, into a buffer that grows mid-run; each row as AppendCsvCell
// writes it cell by cell.
template <class T>
void ExpectRepeatsWritten(Datatype type) {
  SCOPED_TRACE(std::string(core::DatatypeName(type)));
  std::mt19937_64 rng(11);
  const std::vector<T> pool = {std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max(), 0,
                               7, static_cast<T>(-1)};
  std::vector<T> values;
  while (values.size() < 5000) {
    const T v = rng() % 3 == 0 ? pool[rng() % pool.size()] : static_cast<T>(rng() >> (rng() % 64));
    const size_t run = 1 + rng() % 40;
    for (size_t k = 0; k < run; ++k) values.push_back(v);
  }
  Column c;
  c.name = "x";
  c.type = type;
  c.cell_count = values.size();
  c.data.resize(values.size() * sizeof(T), 0);
  std::memcpy(c.data.data(), values.data(), c.data.size());
  Column nulls = c;
  nulls.nullable = true;
  nulls.validity.resize(values.size(), 1);
  for (size_t i = 0; i < values.size(); ++i) nulls.validity[i] = rng() % 7 == 0 ? 0 : 1;
  Column other = Ints("y", std::vector<int32_t>(values.size(), 5));
  const std::vector<std::vector<const Column*>> tables = {
      {&c}, {&nulls}, {&c, &other}, {&other, &nulls}};
  for (const auto& cols : tables) {
    std::vector<CsvColumn> cc;
    for (const Column* col : cols) cc.push_back({col, nullptr});
    auto table = CsvTable::Make(cc, false);
    ASSERT_TRUE(table.ok());
    std::string want, scratch;
    for (uint64_t i = 0; i < values.size(); ++i) {
      for (size_t k = 0; k < cols.size(); ++k) {
        if (k > 0) want += ',';
        AppendCsvCell(want, *cols[k], i, nullptr, scratch);
      }
      want += '\n';
    }
    std::string got;
    got.shrink_to_fit();
    table->AppendRows(got, 0, values.size());
    ASSERT_EQ(got, want) << cols.size() << " columns";
    EXPECT_EQ(table->MeasureRows(0, values.size()), want.size());
  }
}

TEST(CsvTest, RepeatedIntegersAreCopiedExactly) {
  ExpectRepeatsWritten<int8_t>(Datatype::kInt8);
  ExpectRepeatsWritten<uint8_t>(Datatype::kUInt8);
  ExpectRepeatsWritten<int16_t>(Datatype::kInt16);
  ExpectRepeatsWritten<uint16_t>(Datatype::kUInt16);
  ExpectRepeatsWritten<int32_t>(Datatype::kInt32);
  ExpectRepeatsWritten<uint32_t>(Datatype::kUInt32);
  ExpectRepeatsWritten<int64_t>(Datatype::kInt64);
  ExpectRepeatsWritten<uint64_t>(Datatype::kUInt64);
}

// Float columns are converted a block of 256 rows at a time: a nullable
// FLOAT64 and a FLOAT32 column of 1000 rows (random bits: NaNs,
// infinities, subnormals among them; zeros; nulls), rendered over ranges
// that start and end inside and across blocks, give each value's own text
// (value_text.h), and the layout measures as many bytes.
TEST(CsvTest, FloatColumnsAcrossBlocksGiveEachValuesText) {
  std::mt19937_64 rng(9);
  const size_t n = 1000;
  Column d, f;
  d.name = "d";
  d.type = Datatype::kFloat64;
  d.nullable = true;
  f.name = "f";
  f.type = Datatype::kFloat32;
  d.cell_count = f.cell_count = n;
  d.data.resize(n * 8);
  f.data.resize(n * 4);
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits = i % 7 == 3 ? 0 : rng();
    std::memcpy(d.data.data() + i * 8, &bits, 8);
    uint32_t fbits = i % 11 == 5 ? 0x80000000u : static_cast<uint32_t>(rng());
    std::memcpy(f.data.data() + i * 4, &fbits, 4);
    d.validity.push_back(i % 13 == 0 ? 0 : 1);
  }
  auto table = CsvTable::Make({{&d, nullptr}, {&f, nullptr}}, false);
  ASSERT_TRUE(table.ok()) << table.error().message();
  for (auto [first, last] : std::vector<std::pair<uint64_t, uint64_t>>{
           {0, n}, {1, 255}, {255, 257}, {3, 997}, {256, 512}, {511, 1000}, {999, 1000}}) {
    std::string want;
    for (uint64_t i = first; i < last; ++i) {
      if (d.valid(i)) AppendCellText(want, d, i, nullptr);
      want += ',';
      AppendCellText(want, f, i, nullptr);
      want += '\n';
    }
    std::string got;
    table->AppendRows(got, first, last);
    ASSERT_EQ(got, want) << first << ".." << last;
    ASSERT_EQ(table->MeasureRows(first, last), want.size()) << first << ".." << last;
  }
}

struct CorpusTable {
  testing::CorpusView view;
  std::vector<CsvColumn> columns;
};

std::unique_ptr<CorpusTable> LoadTable(const std::string& dir) {
  auto t = std::make_unique<CorpusTable>();
  t->view = testing::LoadCorpusView(dir);
  for (size_t k = 0; k < t->view.columns.size(); ++k) {
    const auto& e = t->view.enumerations[k];
    t->columns.push_back({&t->view.columns[k], e ? &*e : nullptr});
  }
  return t;
}

std::string RenderAll(const CsvTable& table) {
  std::string out;
  table.AppendHeader(out);
  const size_t header = out.size();
  table.AppendRows(out, 0, table.row_count());
  EXPECT_EQ(out.size() - header, table.MeasureRows(0, table.row_count()));
  return out;
}

// CsvIntegerWidths: for every type CsvTable writes as integers, the class
// of each value (its OrderedValue among the bounds) has the width of the
// value's text as MeasureRows counts it, at both ends of the type's range,
// at every bound and next to it, and at random values.
template <class T>
void ExpectWidthClasses(Datatype type) {
  SCOPED_TRACE(std::string(core::DatatypeName(type)));
  std::optional<CsvWidthClasses> w = CsvIntegerWidths(type, 1);
  ASSERT_TRUE(w.has_value());
  ASSERT_EQ(w->widths.size(), w->bounds.size() + 1);
  ASSERT_TRUE(std::is_sorted(w->bounds.begin(), w->bounds.end()));
  std::vector<T> values = {std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max(), 0};
  std::mt19937_64 rng(5);
  for (int k = 0; k < 200; ++k) values.push_back(static_cast<T>(rng() >> (rng() % 64)));
  for (uint64_t b : w->bounds) {
    T v;
    uint8_t bytes[8];
    core::FromOrdered(type, b, bytes);
    std::memcpy(&v, bytes, sizeof(T));
    values.push_back(v);
    values.push_back(static_cast<T>(v - 1));
    values.push_back(static_cast<T>(v + 1));
  }
  for (T v : values) {
    Column c;
    c.name = "x";
    c.type = type;
    c.cell_count = 1;
    c.data.resize(sizeof(T), 0);
    std::memcpy(c.data.data(), &v, sizeof(T));
    auto table = CsvTable::Make({{&c, nullptr}}, false);
    ASSERT_TRUE(table.ok());
    const uint64_t text = table->MeasureRows(0, 1) - 1;  // no line end
    std::string rendered;
    table->AppendRows(rendered, 0, 1);
    ASSERT_EQ(rendered.size(), text + 1);
    const uint64_t ordered = core::OrderedValue(type, c.data.data());
    const size_t cls =
        std::upper_bound(w->bounds.begin(), w->bounds.end(), ordered) - w->bounds.begin();
    EXPECT_EQ(w->widths[cls], text) << rendered;
  }
}

TEST(CsvTest, IntegerWidthClassesHoldTheWidthOfEveryValue) {
  ExpectWidthClasses<int8_t>(Datatype::kInt8);
  ExpectWidthClasses<uint8_t>(Datatype::kUInt8);
  ExpectWidthClasses<int16_t>(Datatype::kInt16);
  ExpectWidthClasses<uint16_t>(Datatype::kUInt16);
  ExpectWidthClasses<int32_t>(Datatype::kInt32);
  ExpectWidthClasses<uint32_t>(Datatype::kUInt32);
  ExpectWidthClasses<int64_t>(Datatype::kInt64);
  ExpectWidthClasses<uint64_t>(Datatype::kUInt64);
  ExpectWidthClasses<int64_t>(Datatype::kTimeNs);
  // Not written as integers: no classes.
  EXPECT_FALSE(CsvIntegerWidths(Datatype::kFloat64, 1).has_value());
  EXPECT_FALSE(CsvIntegerWidths(Datatype::kStringAscii, core::kVarNum).has_value());
  EXPECT_FALSE(CsvIntegerWidths(Datatype::kDatetimeDay, 1).has_value());
  EXPECT_FALSE(CsvIntegerWidths(Datatype::kInt32, 2).has_value());
}

TEST(CsvTest, CorpusTypesDataCsvMatchesIndependentRendering) {
  // testdata/types_latest.csv: gen_corpus_csv.py's rendering of TileDB's own
  // read of corpus/arrays/types (numpy for datetimes and float digits).
  auto t = LoadTable(testing::CorpusExpected() + "/types/views/latest");
  ASSERT_EQ(t->columns.size(), 23u);
  auto table = CsvTable::Make(t->columns, true);
  ASSERT_TRUE(table.ok()) << table.error().message();
  auto want = testing::ReadWholeFile(testing::RenderTestData() + "/types_latest.csv");
  ASSERT_TRUE(want.has_value());
  EXPECT_EQ(RenderAll(*table), *want);
  ExpectEveryBlockMatches(*table, {1, 6});
}

TEST(CsvTest, CorpusEnumerationsPrintLabels) {
  auto t = LoadTable(testing::CorpusExpected() + "/enumerations/views/latest");
  auto table = CsvTable::Make(t->columns, true);
  ASSERT_TRUE(table.ok());
  auto want = testing::ReadWholeFile(testing::RenderTestData() + "/enumerations_latest.csv");
  ASSERT_TRUE(want.has_value());
  std::string got = RenderAll(*table);
  EXPECT_EQ(got, *want);
  EXPECT_NE(got.find("6,\xC3\xBCn\xC3\xAF"
                     "code,mid,-2\n"),
            std::string::npos);
}

// Every view of every array in the corpus: our data.csv and every field's
// .txt against gen_corpus_csv.py, which also reads ours back with Python's
// csv module (one python run for all of them).
TEST(CsvTest, EveryCorpusViewMatchesPythonLive) {
  SKIP_WITHOUT_NUMPY();
  namespace fs = std::filesystem;
  std::string list;
  std::vector<std::string> files;
  int views = 0;
  for (const auto& entry : testing::ExpectedViews()) {
    std::string dir = entry.parent_path().string();
    auto t = LoadTable(dir);
    if (t->columns.empty()) continue;
    auto table = CsvTable::Make(t->columns, true);
    ASSERT_TRUE(table.ok()) << dir << ": " << table.error().message();
    std::string ours = testing::TempPath("view" + std::to_string(files.size()) + ".csv");
    ASSERT_TRUE(testing::WriteWholeFile(ours, RenderAll(*table)));
    files.push_back(ours);
    list += dir + "\t" + ours + "\n";
    for (const CsvColumn& col : t->columns) {
      auto txt = CsvTable::Make({col}, false);
      ASSERT_TRUE(txt.ok());
      ours = testing::TempPath("view" + std::to_string(files.size()) + ".txt");
      ASSERT_TRUE(testing::WriteWholeFile(ours, RenderAll(*txt)));
      files.push_back(ours);
      list += dir + "\t" + ours + "\t" + col.column->name + "\n";
    }
    ++views;
  }
  EXPECT_GT(views, 50);
  std::string lst = testing::TempPath("views.txt");
  ASSERT_TRUE(testing::WriteWholeFile(lst, list));
  std::string out;
  int rc = testing::RunCommand(testing::PythonWithNumpy() + " " + testing::RenderTestData() +
                                   "/gen_corpus_csv.py --batch " + lst + " 2>&1",
                               &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("bad 0"), std::string::npos) << out;
  for (const auto& f : files) std::remove(f.c_str());
  std::remove(lst.c_str());
}

}  // namespace
}  // namespace tiledbfs::fusefs
