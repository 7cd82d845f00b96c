// The parsers alone, on bytes: real footers from the corpus and hand-built
// ones, every truncation prefix, bad enum (bool) bytes, unsupported versions
// and hostile counts that must allocate nothing.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/fragment/legacy_fragment_metadata.h"
#include "core/tile/generic_tile.h"
#include "tests/core/fragment/fragment_test_util.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;
using namespace fragment_testing;

struct RealFooter {
  ByteVec bytes;  // the footer with its length field
  uint64_t offset = 0;
  ArraySchema schema;
  uint32_t version = 0;
};

// The footer of the (first) fragment of a corpus array.
RealFooter ReadRealFooter(const std::string& array) {
  RealFooter f;
  auto storage = LocalStorage::Open(CorpusDir() + "/arrays/" + array);
  EXPECT_TRUE(storage.ok());
  std::string frag, schema;
  for (const auto& e : fs::directory_iterator(CorpusDir() + "/arrays/" + array + "/__fragments")) {
    frag = e.path().filename().string();
    break;
  }
  for (const auto& e : fs::directory_iterator(CorpusDir() + "/arrays/" + array + "/__schema")) {
    if (e.is_regular_file()) schema = e.path().filename().string();
  }
  auto s = LoadArraySchema(**storage, "__schema/" + schema, nullptr, DefaultLimits());
  EXPECT_TRUE(s.ok());
  f.schema = *s;
  f.schema.name = schema;
  const std::string meta = "__fragments/" + frag + "/__fragment_metadata.tdb";
  ByteVec file = *(*storage)->ReadAll(meta);
  uint64_t length;
  std::memcpy(&length, file.data() + file.size() - 8, 8);
  f.offset = file.size() - 8 - length;
  f.bytes.assign(file.begin() + f.offset, file.end());
  f.version = ParsedName(frag).ImpliedFormatVersion();
  return f;
}

TEST(FooterParser, RealFootersParse) {
  for (const char* array : {"dense_1d", "sparse_strdim", "sparse_2d", "with_timestamps"}) {
    RealFooter rf = ReadRealFooter(array);
    auto f = ParseFragmentFooter(rf.bytes, rf.offset, rf.schema, rf.version);
    ASSERT_TRUE(f.ok()) << array << ": " << f.error().ToString();
    EXPECT_EQ(f->version, 22u);
    EXPECT_EQ(f->array_schema_name, rf.schema.name);
    EXPECT_EQ(f->footer_size, rf.bytes.size());
    EXPECT_EQ(f->file_sizes.size(), f->tile_offsets_offsets.size());
    auto prefix = PeekFragmentFooter(rf.bytes, rf.offset);
    ASSERT_TRUE(prefix.ok());
    EXPECT_EQ(prefix->array_schema_name, rf.schema.name);
  }
  RealFooter ts = ReadRealFooter("with_timestamps");
  auto f = ParseFragmentFooter(ts.bytes, ts.offset, ts.schema, 22);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->has_timestamps);
  EXPECT_FALSE(f->has_delete_meta);
  // a, s, __coords, x, y, t
  EXPECT_EQ(f->file_sizes.size(), 6u);
  EXPECT_EQ(FooterFieldIndex(ts.schema, 22, true, false, FieldRef::Timestamps()), 5);
  EXPECT_GT(f->file_sizes[5], 0u);  // t.tdb holds data
}

TEST(FooterParser, EveryTruncationOfARealFooterIsCorrupt) {
  for (const char* array : {"dense_1d", "sparse_strdim"}) {
    RealFooter rf = ReadRealFooter(array);
    for (size_t k = 0; k < rf.bytes.size(); ++k) {
      auto f = ParseFragmentFooter(Bytes(rf.bytes).first(k), rf.offset, rf.schema, rf.version);
      ASSERT_FALSE(f.ok()) << array << " prefix " << k;
      EXPECT_EQ(f.error().code(), ErrorCode::kCorrupt)
          << array << " prefix " << k << ": " << f.error().message();
    }
    // The fields alone (the consolidated form) parse; any shorter prefix not.
    uint64_t consumed = 0;
    auto fields = ParseFragmentFooterFields(rf.bytes, rf.offset, rf.schema, rf.version, &consumed);
    ASSERT_TRUE(fields.ok());
    EXPECT_EQ(consumed + 8, rf.bytes.size());
    for (size_t k = 0; k < consumed; ++k) {
      uint64_t c = 0;
      auto f =
          ParseFragmentFooterFields(Bytes(rf.bytes).first(k), rf.offset, rf.schema, rf.version, &c);
      ASSERT_FALSE(f.ok()) << array << " prefix " << k;
      EXPECT_EQ(f.error().code(), ErrorCode::kCorrupt);
    }
  }
}

TEST(FooterParser, EveryTruncationOfEveryVersionIsCorrupt) {
  for (uint32_t v = 3; v <= 23; ++v) {
    SyntheticFragment sf;
    sf.version = v;
    sf.schema = SparseSchema(v, HasSchemaName(v) ? "__1_1_abc" : kLegacySchemaName);
    sf.has_timestamps = v >= 14;
    sf.has_delete_meta = v >= 15;
    sf.unknown_optional_section = true;
    sf.global_order_section = true;
    sf.FillDefaults();
    sf.Build();
    Bytes footer = sf.FooterBytes();
    ASSERT_TRUE(ParseFragmentFooter(footer, 0, sf.schema, v).ok()) << v;
    for (size_t k = 0; k < footer.size(); ++k) {
      auto f = ParseFragmentFooter(footer.first(k), 0, sf.schema, v);
      ASSERT_FALSE(f.ok()) << "version " << v << " prefix " << k;
      EXPECT_EQ(f.error().code(), ErrorCode::kCorrupt) << "version " << v << " prefix " << k;
    }
  }
}

TEST(FooterParser, UnsupportedAndImpossibleVersions) {
  RealFooter rf = ReadRealFooter("dense_1d");
  ByteVec b = rf.bytes;
  for (uint32_t v : {24u, 1000u, 0xFFFFFFFFu}) {
    std::memcpy(b.data(), &v, 4);
    auto f = ParseFragmentFooter(b, rf.offset, rf.schema, 0);
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.error().code(), ErrorCode::kUnsupported) << v;
    EXPECT_NE(f.error().message().find("version " + std::to_string(v)), std::string::npos)
        << f.error().message();
    EXPECT_EQ(PeekFragmentFooter(b, 0).error().code(), ErrorCode::kUnsupported);
  }
  for (uint32_t v : {0u, 1u, 2u}) {
    std::memcpy(b.data(), &v, 4);
    auto f = ParseFragmentFooter(b, rf.offset, rf.schema, 0);
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.error().code(), ErrorCode::kCorrupt) << v;
  }
  // A footer whose version disagrees with the fragment name's.
  auto f = ParseFragmentFooter(rf.bytes, rf.offset, rf.schema, 21);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(f.error().message().find("fragment name"), std::string::npos);
}

TEST(FooterParser, BadBooleanBytes) {
  RealFooter rf = ReadRealFooter("dense_1d");
  const size_t dense_at = 4 + 8 + rf.schema.name.size();
  for (size_t at : {dense_at, dense_at + 1}) {
    ByteVec b = rf.bytes;
    b[at] = 2;
    auto f = ParseFragmentFooter(b, rf.offset, rf.schema, 22);
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(f.error().message().find(at == dense_at ? "dense" : "null non-empty domain"),
              std::string::npos)
        << f.error().message();
    EXPECT_NE(f.error().message().find("offset " + std::to_string(rf.offset + at)),
              std::string::npos)
        << f.error().message();
  }
}

TEST(FooterParser, LengthFieldMustMatch) {
  RealFooter rf = ReadRealFooter("sparse_2d");
  ByteVec b = rf.bytes;
  uint64_t length;
  std::memcpy(&length, b.data() + b.size() - 8, 8);
  length += 1;
  std::memcpy(b.data() + b.size() - 8, &length, 8);
  auto f = ParseFragmentFooter(b, rf.offset, rf.schema, 22);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(f.error().message().find("footer length"), std::string::npos);
  // Trailing bytes after the length field.
  ByteVec longer = rf.bytes;
  longer.push_back(0);
  EXPECT_EQ(ParseFragmentFooter(longer, rf.offset, rf.schema, 22).error().code(),
            ErrorCode::kCorrupt);
}

TEST(FooterParser, HostileSchemaNameSizeAllocatesNothing) {
  ByteWriter w;
  w.Put<uint32_t>(22).Put<uint64_t>(uint64_t{1} << 62).PutString("abc");
  auto p = PeekFragmentFooter(w.bytes(), 100);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(p.error().message().find("schema name"), std::string::npos);
  ByteWriter empty;
  empty.Put<uint32_t>(22).Put<uint64_t>(0);
  EXPECT_EQ(PeekFragmentFooter(empty.bytes(), 0).error().code(), ErrorCode::kCorrupt);
}

TEST(FooterParser, OptionalSectionsKnownAndUnknown) {
  SyntheticFragment sf;
  sf.version = 23;
  sf.schema = SparseSchema(23, "__1_1_abc");
  sf.has_timestamps = sf.has_delete_meta = true;
  sf.unknown_optional_section = true;
  sf.FillDefaults();
  sf.Build();
  auto f = ParseFragmentFooter(sf.FooterBytes(), 0, sf.schema, 23);
  ASSERT_TRUE(f.ok()) << f.error().ToString();
  EXPECT_FALSE(f->has_tile_global_order_bounds);
  // A global order section of the wrong size is corrupt.
  ByteVec b(sf.FooterBytes().begin(), sf.FooterBytes().end());
  // The unknown section: id 77, size 5, "hello"; rewrite it as id 0.
  for (size_t i = 0; i + 8 <= b.size(); ++i) {
    uint64_t v;
    std::memcpy(&v, b.data() + i, 8);
    if (v == 77) {
      const uint64_t zero = 0;
      std::memcpy(b.data() + i, &zero, 8);
      break;
    }
  }
  auto bad = ParseFragmentFooter(b, 0, sf.schema, 23);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(bad.error().message().find("global order"), std::string::npos);
}

TEST(FooterParser, ComputedFooterSizes) {
  ArraySchema s = SparseSchema(4, kLegacySchemaName);  // 2 attrs, 2 INT32 dims
  // 4+1+1 + 16 (NED) + 8+8 + 3*8 + 2*8 + 8 + 3*8 + 2*8 + 2*8
  EXPECT_EQ(*FixedFooterSize(s, 3), 6u + 16 + 16 + 24 + 16 + 8 + 24 + 16 + 16);
  // 5-6: N = 5, five arrays
  EXPECT_EQ(*FixedFooterSize(s, 5), 6u + 16 + 16 + 8 + 5 * 5 * 8);
  // 7-9: seven arrays
  EXPECT_EQ(*FixedFooterSize(s, 9), 6u + 16 + 16 + 8 + 7 * 5 * 8);
  EXPECT_FALSE(FixedFooterSize(s, 10).ok());
  s.dimensions[1] = VarDim("k");
  EXPECT_FALSE(FixedFooterSize(s, 7).ok());
  EXPECT_TRUE(FooterHasLengthField(s, 7));
}

TEST(SectionParsers, Uint64ListHostileCountAllocatesNothing) {
  ByteWriter w;
  w.Put<uint64_t>(uint64_t{1} << 60).Put<uint64_t>(7);
  auto r = ParseUint64List(w.bytes(), 0, "tile offsets");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(r.error().message().find("tile offsets"), std::string::npos);
  ByteWriter ok;
  PutList(ok, {1, 2, 3});
  ASSERT_TRUE(ParseUint64List(ok.bytes(), 0, "x").ok());
  for (size_t k = 0; k < ok.size(); ++k) {
    EXPECT_EQ(ParseUint64List(Bytes(ok.bytes()).first(k), 0, "x").error().code(),
              ErrorCode::kCorrupt);
  }
  ByteVec trailing = ok.bytes();
  trailing.push_back(1);
  EXPECT_EQ(ParseUint64List(trailing, 0, "x").error().code(), ErrorCode::kCorrupt);
}

TEST(SectionParsers, RTree) {
  ArraySchema s = SparseSchema(22, "x");
  s.dimensions[1] = VarDim("k");
  // Two levels: a root MBR, then two leaves.
  ByteWriter v;
  v.Put<uint32_t>(10).Put<uint32_t>(2);
  v.Put<uint64_t>(1).Put<int32_t>(1).Put<int32_t>(9).Put<uint64_t>(2).Put<uint64_t>(1);
  v.PutString("az");
  v.Put<uint64_t>(2);
  v.Put<int32_t>(1).Put<int32_t>(5).Put<uint64_t>(3).Put<uint64_t>(2).PutString("abc");
  v.Put<int32_t>(2).Put<int32_t>(9).Put<uint64_t>(0).Put<uint64_t>(0);
  auto leaves = ParseRTreeLeaves(v.bytes(), 0, s, 22);
  ASSERT_TRUE(leaves.ok()) << leaves.error().ToString();
  ASSERT_EQ(leaves->size(), 2u);
  EXPECT_EQ((*leaves)[0][0], R<int32_t>(1, 5));
  EXPECT_EQ((*leaves)[0][1], RS("ab", "c"));
  EXPECT_EQ((*leaves)[1][1], RS("", ""));
  for (size_t k = 0; k < v.size(); ++k) {
    auto r = ParseRTreeLeaves(Bytes(v.bytes()).first(k), 0, s, 22);
    ASSERT_FALSE(r.ok()) << k;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
  }
  // Hostile MBR count.
  ByteWriter h;
  h.Put<uint32_t>(10).Put<uint32_t>(1).Put<uint64_t>(uint64_t{1} << 61);
  EXPECT_EQ(ParseRTreeLeaves(h.bytes(), 0, s, 22).error().code(), ErrorCode::kCorrupt);
  // Hostile level count: bounded by the bytes, not looped 4 billion times.
  ByteWriter lv;
  lv.Put<uint32_t>(10).Put<uint32_t>(0xFFFFFFFFu).Put<uint64_t>(0);
  EXPECT_EQ(ParseRTreeLeaves(lv.bytes(), 0, s, 22).error().code(), ErrorCode::kCorrupt);
  // A var range whose start size exceeds its size.
  ByteWriter bad;
  bad.Put<uint32_t>(10).Put<uint32_t>(1).Put<uint64_t>(1);
  bad.Put<int32_t>(1).Put<int32_t>(2).Put<uint64_t>(1).Put<uint64_t>(2).PutString("a");
  EXPECT_EQ(ParseRTreeLeaves(bad.bytes(), 0, s, 22).error().code(), ErrorCode::kCorrupt);
}

TEST(SectionParsers, LegacyRTreeLayout) {
  ArraySchema s = SparseSchema(4, kLegacySchemaName);
  ByteWriter w;
  w.Put<uint32_t>(2).Put<uint32_t>(10).Put<uint8_t>(0).Put<uint32_t>(1).Put<uint64_t>(1);
  w.Put<int32_t>(1).Put<int32_t>(2).Put<int32_t>(3).Put<int32_t>(4);
  auto leaves = ParseRTreeLeaves(w.bytes(), 0, s, 4);
  ASSERT_TRUE(leaves.ok()) << leaves.error().ToString();
  EXPECT_EQ((*leaves)[0], (std::vector<Range>{R<int32_t>(1, 2), R<int32_t>(3, 4)}));
}

TEST(SectionParsers, TileMinMax) {
  ByteWriter w;
  w.Put<uint64_t>(16).Put<uint64_t>(5).Put<uint64_t>(0).Put<uint64_t>(2).PutString("abcde");
  auto var = ParseTileMinMax(w.bytes(), 0, true, 0, "tile mins");
  ASSERT_TRUE(var.ok()) << var.error().ToString();
  EXPECT_EQ(*var, (std::vector<ByteVec>{{'a', 'b'}, {'c', 'd', 'e'}}));
  for (size_t k = 0; k < w.size(); ++k) {
    EXPECT_EQ(ParseTileMinMax(Bytes(w.bytes()).first(k), 0, true, 0, "m").error().code(),
              ErrorCode::kCorrupt)
        << k;
  }
  // Offsets out of order or past the var buffer.
  ByteWriter bad;
  bad.Put<uint64_t>(16).Put<uint64_t>(5).Put<uint64_t>(3).Put<uint64_t>(2).PutString("abcde");
  EXPECT_EQ(ParseTileMinMax(bad.bytes(), 0, true, 0, "m").error().code(), ErrorCode::kCorrupt);
  ByteWriter past;
  past.Put<uint64_t>(8).Put<uint64_t>(1).Put<uint64_t>(9).PutString("a");
  EXPECT_EQ(ParseTileMinMax(past.bytes(), 0, true, 0, "m").error().code(), ErrorCode::kCorrupt);
  // Fixed cells that do not divide the buffer.
  ByteWriter fixed;
  fixed.Put<uint64_t>(6).Put<uint64_t>(0).Put<int32_t>(1).Put<uint16_t>(2);
  EXPECT_EQ(ParseTileMinMax(fixed.bytes(), 0, false, 4, "m").error().code(), ErrorCode::kCorrupt);
  // Hostile buffer sizes.
  ByteWriter huge;
  huge.Put<uint64_t>(uint64_t{1} << 62).Put<uint64_t>(uint64_t{1} << 62);
  EXPECT_EQ(ParseTileMinMax(huge.bytes(), 0, true, 0, "m").error().code(), ErrorCode::kCorrupt);
  // No values at all.
  ByteWriter none;
  none.Put<uint64_t>(0).Put<uint64_t>(0);
  auto empty = ParseTileMinMax(none.bytes(), 0, false, 4, "m");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(SectionParsers, FragmentStatsAndProcessedConditions) {
  ByteWriter w;
  w.Put<uint64_t>(1).Put<uint8_t>(7).Put<uint64_t>(2).Put<uint16_t>(9).Put<uint64_t>(5);
  w.Put<uint64_t>(6);
  auto s = ParseFragmentStats(w.bytes(), 0, 1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)[0].min, ByteVec{7});
  EXPECT_EQ((*s)[0].sum, 5u);
  EXPECT_EQ((*s)[0].null_count, 6u);
  for (size_t k = 0; k < w.size(); ++k) {
    EXPECT_EQ(ParseFragmentStats(Bytes(w.bytes()).first(k), 0, 1).error().code(),
              ErrorCode::kCorrupt);
  }
  EXPECT_EQ(ParseFragmentStats(w.bytes(), 0, uint64_t{1} << 60).error().code(),
            ErrorCode::kCorrupt);

  ByteWriter c;
  c.Put<uint64_t>(2).Put<uint64_t>(3).PutString("abc").Put<uint64_t>(0);
  auto conditions = ParseProcessedConditions(c.bytes(), 0);
  ASSERT_TRUE(conditions.ok());
  EXPECT_EQ(*conditions, (std::vector<std::string>{"abc", ""}));
  for (size_t k = 0; k < c.size(); ++k) {
    EXPECT_EQ(ParseProcessedConditions(Bytes(c.bytes()).first(k), 0).error().code(),
              ErrorCode::kCorrupt);
  }
  ByteWriter hostile;
  hostile.Put<uint64_t>(uint64_t{1} << 60).Put<uint64_t>(uint64_t{1} << 60);
  EXPECT_EQ(ParseProcessedConditions(hostile.bytes(), 0).error().code(), ErrorCode::kCorrupt);
}

TEST(LegacyParser, CorpusPayloadAndTruncations) {
  const std::string dir = CorpusDir() + "/arrays/legacy_non_split_coords_v1_4_0";
  auto storage = LocalStorage::Open(dir);
  ASSERT_TRUE(storage.ok());
  std::string frag;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory()) frag = e.path().filename().string();
  }
  auto schema = LoadArraySchema(**storage, "__array_schema.tdb", nullptr, DefaultLimits());
  ASSERT_TRUE(schema.ok()) << schema.error().ToString();
  auto tile =
      ReadGenericTile(**storage, frag + "/__fragment_metadata.tdb", 0, nullptr, DefaultLimits());
  ASSERT_TRUE(tile.ok()) << tile.error().ToString();
  auto m = ParseLegacyFragmentMetadata(tile->data, 0, *schema, false);
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  EXPECT_EQ(m->footer.version, 1u);
  EXPECT_EQ(m->footer.sparse_tile_num, 1u);
  EXPECT_EQ(m->footer.last_tile_cell_num, 4u);
  EXPECT_EQ(m->footer.non_empty_domain, (std::vector<Range>{R<int32_t>(1, 4), R<int32_t>(10, 10)}));
  EXPECT_EQ(m->mbrs.size(), 1u);
  EXPECT_EQ(m->tile_offsets, (std::vector<std::vector<uint64_t>>{{0}, {0}}));
  for (size_t k = 0; k < tile->data.size(); ++k) {
    auto r = ParseLegacyFragmentMetadata(Bytes(tile->data).first(k), 0, *schema, false);
    ASSERT_FALSE(r.ok()) << k;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt) << k;
  }
  // A version the legacy layout cannot have.
  ByteVec b = tile->data;
  b[0] = 3;
  EXPECT_EQ(ParseLegacyFragmentMetadata(b, 0, *schema, false).error().code(), ErrorCode::kCorrupt);
  // A hostile MBR count.
  ByteWriter h;
  h.Put<uint32_t>(1).Put<uint64_t>(0).Put<uint64_t>(uint64_t{1} << 60);
  EXPECT_EQ(ParseLegacyFragmentMetadata(h.bytes(), 0, *schema, false).error().code(),
            ErrorCode::kCorrupt);
}

TEST(ConsolidatedMetaParser, RealFileAndTruncations) {
  const std::string dir = CorpusDir() + "/arrays/commits_consolidated";
  auto storage = LocalStorage::Open(dir);
  ASSERT_TRUE(storage.ok());
  std::string meta;
  for (const auto& e : fs::directory_iterator(dir + "/__fragment_meta")) {
    meta = "__fragment_meta/" + e.path().filename().string();
  }
  auto tile = ReadGenericTile(**storage, meta, 0, nullptr, DefaultLimits());
  ASSERT_TRUE(tile.ok()) << tile.error().ToString();
  auto entries = ParseConsolidatedFragmentMeta(tile->data, 0, DefaultLimits());
  ASSERT_TRUE(entries.ok()) << entries.error().ToString();
  ASSERT_EQ(entries->size(), 5u);
  uint64_t prev_end = 0;
  for (const auto& e : *entries) {
    EXPECT_EQ(e.fragment_name.size(), 2 + 13 + 1 + 13 + 1 + 32 + 3);
    EXPECT_GE(e.offset, prev_end);
    prev_end = e.offset + e.footer.size();
    auto prefix = PeekFragmentFooter(e.footer, e.offset);
    ASSERT_TRUE(prefix.ok());
    EXPECT_EQ(prefix->version, 22u);
  }
  EXPECT_EQ(prev_end, tile->data.size());
  // Truncations: until the last footer starts, every prefix is corrupt.
  for (size_t k = 0; k <= entries->back().offset; ++k) {
    auto r = ParseConsolidatedFragmentMeta(Bytes(tile->data).first(k), 0, DefaultLimits());
    ASSERT_FALSE(r.ok()) << k;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt) << k;
  }
}

TEST(ConsolidatedMetaParser, HostileValues) {
  ByteWriter count;
  count.Put<uint32_t>(0xFFFFFFFFu).Put<uint64_t>(1);
  EXPECT_EQ(ParseConsolidatedFragmentMeta(count.bytes(), 0, DefaultLimits()).error().code(),
            ErrorCode::kCorrupt);
  ByteWriter name;
  name.Put<uint32_t>(1).Put<uint64_t>(uint64_t{1} << 62).Put<uint64_t>(0);
  EXPECT_EQ(ParseConsolidatedFragmentMeta(name.bytes(), 0, DefaultLimits()).error().code(),
            ErrorCode::kCorrupt);
  // An offset inside the name table, and one past the end.
  for (uint64_t off : {uint64_t{4}, uint64_t{1000}}) {
    ByteWriter w;
    w.Put<uint32_t>(1).Put<uint64_t>(3).PutString("__a").Put<uint64_t>(off);
    w.Put<uint32_t>(22);
    auto r = ParseConsolidatedFragmentMeta(w.bytes(), 0, DefaultLimits());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
  }
  // Format < 9 names are URIs: the fragment name is the last component.
  ByteWriter uri;
  uri.Put<uint32_t>(1).Put<uint64_t>(21).PutString("file:///data/arr/__x/");
  uri.Put<uint64_t>(4 + 8 + 21 + 8).Put<uint32_t>(7);
  auto r = ParseConsolidatedFragmentMeta(uri.bytes(), 0, DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ((*r)[0].fragment_name, "__x");
  EXPECT_EQ(ByteVec((*r)[0].footer.begin(), (*r)[0].footer.end()), Le<uint32_t>(7));
}

TEST(DenseGrid, TileCountsAndErrors) {
  ArraySchema s = SparseSchema(22, "x");
  s.array_type = ArrayType::kDense;
  auto g = ComputeDenseTileGrid(s, {R<int32_t>(10, 11), R<int32_t>(1, 100)});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->first_tile, (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(g->tiles_per_dim, (std::vector<uint64_t>{2, 10}));  // 10 is in tile 0, 11 in 1
  EXPECT_EQ(g->tile_num, 20u);
  EXPECT_EQ(g->cells_per_tile, 100u);
  // Below the domain, inverted, zero extent, float dimension.
  EXPECT_FALSE(ComputeDenseTileGrid(s, {R<int32_t>(0, 5), R<int32_t>(1, 1)}).ok());
  EXPECT_FALSE(ComputeDenseTileGrid(s, {R<int32_t>(5, 4), R<int32_t>(1, 1)}).ok());
  ArraySchema z = s;
  z.dimensions[0].tile_extent = Le<int32_t>(0);
  EXPECT_EQ(ComputeDenseTileGrid(z, {R<int32_t>(1, 5), R<int32_t>(1, 1)}).error().code(),
            ErrorCode::kCorrupt);
  ArraySchema f = s;
  f.dimensions[0] = Dim("f", Datatype::kFloat64, R<double>(0, 1), Le<double>(0.5));
  EXPECT_EQ(ComputeDenseTileGrid(f, {R<double>(0, 1), R<int32_t>(1, 1)}).error().code(),
            ErrorCode::kCorrupt);
  // A null extent: one tile over the whole domain.
  ArraySchema n = s;
  n.dimensions[1].tile_extent.reset();
  auto one = ComputeDenseTileGrid(n, {R<int32_t>(1, 5), R<int32_t>(3, 4)});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->tiles_per_dim[1], 1u);
  EXPECT_EQ(one->cells_per_tile, 1000u);
  // Unsigned 64-bit extremes and overflowing products.
  ArraySchema u = s;
  u.dimensions[0] = Dim("u", Datatype::kUInt64, R<uint64_t>(0, UINT64_MAX - 1), Le<uint64_t>(1));
  u.dimensions[1] = Dim("v", Datatype::kUInt64, R<uint64_t>(0, UINT64_MAX - 1), Le<uint64_t>(1));
  auto big =
      ComputeDenseTileGrid(u, {R<uint64_t>(0, UINT64_MAX - 2), R<uint64_t>(0, UINT64_MAX - 2)});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(big.error().message().find("overflow"), std::string::npos);
}

}  // namespace
}  // namespace tiledbfs::core
