#include "core/schema/array_schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>

#include "core/util/sanitizers.h"
#include "tests/core/schema/schema_builder.h"
#include "tests/core/schema/schema_payloads.h"

// Specs below name only the fields a test changes.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

// The largest single allocation made while tracking is on: proves an
// oversized length allocates nothing. Replaces the global operator new of
// this test binary only; not under AddressSanitizer, which owns new/delete
// (there the size checks are skipped).
namespace {
thread_local bool g_track_allocs = false;
thread_local size_t g_largest_alloc = 0;
}  // namespace

#if TILEDBFS_ASAN
constexpr bool kAllocsTracked = false;
#else
constexpr bool kAllocsTracked = true;
void* operator new(size_t n) {
  if (g_track_allocs && n > g_largest_alloc) g_largest_alloc = n;
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n) { return operator new(n); }
// GCC sees free() given memory from operator new; this operator new takes
// it from malloc.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
#endif

namespace tiledbfs::core {
namespace {

using testing::AttrSpec;
using testing::BuildSchema;
using testing::DimSpec;
using testing::LabelSpec;
using testing::Le;
using testing::SchemaSpec;
using testing::VarRange;

template <size_t N>
Bytes Span(const uint8_t (&a)[N]) {
  return Bytes(a, N);
}

ByteVec Copy(Bytes b) { return ByteVec(b.begin(), b.end()); }

// Position of `needle` in `hay`; fails the test if absent.
size_t Find(const ByteVec& hay, const ByteVec& needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end());
  EXPECT_NE(it, hay.end());
  return it == hay.end() ? 0 : static_cast<size_t>(it - hay.begin());
}

template <class T>
T As(const ByteVec& b) {
  T v{};
  EXPECT_EQ(b.size(), sizeof(T));
  if (b.size() == sizeof(T)) std::memcpy(&v, b.data(), sizeof(T));
  return v;
}

void ExpectError(const Result<ArraySchema>& r, ErrorCode code, std::string_view substring) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), code) << r.error().ToString();
  EXPECT_NE(r.error().message().find(substring), std::string::npos)
      << "message: " << r.error().message() << "\nexpected to contain: " << substring;
}

// ---- Real payloads (decoded generic tiles of the corpus) ----

TEST(ArraySchemaParse, EnumerationsSchemaAfterEvolution) {
  auto r = ParseArraySchema(Span(testdata::kEnumerationsT2Schema), 0, DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  const ArraySchema& s = *r;
  EXPECT_EQ(s.version, 22u);
  EXPECT_TRUE(s.dense());
  EXPECT_EQ(s.capacity, 10000u);
  ASSERT_EQ(s.dimensions.size(), 1u);
  EXPECT_EQ(s.dimensions[0].name, "i");
  EXPECT_EQ(s.dimensions[0].type, Datatype::kInt32);
  EXPECT_EQ(As<int32_t>(s.dimensions[0].domain.lo), 1);
  EXPECT_EQ(As<int32_t>(s.dimensions[0].domain.hi), 12);
  EXPECT_EQ(As<int32_t>(*s.dimensions[0].tile_extent), 4);
  ASSERT_EQ(s.dim_filters(0).filters.size(), 1u);  // stored with the dimension
  EXPECT_EQ(s.dim_filters(0).filters[0].type, FilterType::kZstd);
  ASSERT_EQ(s.attributes.size(), 3u);
  EXPECT_EQ(s.attributes[0].name, "color");
  EXPECT_EQ(s.attributes[0].type, Datatype::kUInt8);
  EXPECT_EQ(s.attributes[0].enumeration_name, "colors");
  EXPECT_EQ(s.attributes[0].fill_value, ByteVec{0xff});
  EXPECT_EQ(s.attributes[1].name, "level");
  EXPECT_TRUE(s.attributes[1].nullable);
  EXPECT_EQ(s.attributes[1].enumeration_name, "levels");
  EXPECT_EQ(s.attributes[2].enumeration_name, std::nullopt);
  ASSERT_EQ(s.enumerations.size(), 2u);
  EXPECT_EQ(s.enumerations[0].name, "levels");
  EXPECT_EQ(s.enumerations[0].path_name, "__3337db9204790e3f472aac634e935b94_0");
  EXPECT_EQ(s.enumerations[1].name, "colors");
  // After the extension at t2 the schema points at a new file for colors.
  EXPECT_EQ(s.enumerations[1].path_name, "__10e3083c9083c0f27d0f20a203b2e71d_0");
  EXPECT_TRUE(s.current_domain.empty);
  EXPECT_EQ(s.validity_filters.filters.size(), 1u);
  EXPECT_EQ(s.AttributeIndex("level"), 1);
  EXPECT_EQ(s.AttributeIndex("nope"), -1);
  EXPECT_EQ(s.DimensionIndex("i"), 0);
}

TEST(ArraySchemaParse, CurrentDomainExpanded) {
  auto r = ParseArraySchema(Span(testdata::kCurrentDomainT2Schema), 0, DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  const CurrentDomain& cd = r->current_domain;
  EXPECT_FALSE(cd.empty);
  EXPECT_EQ(cd.version, 0u);
  ASSERT_EQ(cd.ranges.size(), 2u);
  EXPECT_EQ(As<int64_t>(cd.ranges[0].lo), 0);
  EXPECT_EQ(As<int64_t>(cd.ranges[0].hi), 199);
  EXPECT_EQ(As<int64_t>(cd.ranges[1].lo), 0);
  EXPECT_EQ(As<int64_t>(cd.ranges[1].hi), 99);
  EXPECT_EQ(As<int64_t>(r->dimensions[1].domain.hi), 999999);
}

TEST(ArraySchemaParse, StringDimension) {
  auto r = ParseArraySchema(Span(testdata::kSparseStrdimSchema), 0, DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->dimensions.size(), 2u);
  const Dimension& key = r->dimensions[0];
  EXPECT_EQ(key.type, Datatype::kStringAscii);
  EXPECT_TRUE(key.var());
  EXPECT_TRUE(key.domain.lo.empty());
  EXPECT_FALSE(key.tile_extent.has_value());
  EXPECT_EQ(r->dimensions[1].type, Datatype::kFloat64);
  EXPECT_EQ(As<double>(r->dimensions[1].domain.lo), -1000.0);
  EXPECT_EQ(r->capacity, 3u);
}

TEST(ArraySchemaParse, LegacyVersion11) {
  auto r = ParseArraySchema(Span(testdata::kLegacyV11Schema), 0, DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->version, 11u);
  EXPECT_FALSE(r->dense());
  ASSERT_EQ(r->attributes.size(), 3u);
  EXPECT_EQ(r->attributes[2].cell_val_num, 2u);
  EXPECT_EQ(r->attributes[2].fill_value, Copy(DefaultFillValue(Datatype::kFloat32, 2)));
}

TEST(ArraySchemaParse, LegacyVersion1) {
  auto r = ParseArraySchema(Span(testdata::kLegacyV1Schema), 0, DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  const ArraySchema& s = *r;
  EXPECT_EQ(s.version, 1u);
  EXPECT_FALSE(s.allows_dups);
  EXPECT_FALSE(s.dense());
  EXPECT_EQ(s.tile_order, Layout::kColMajor);
  EXPECT_EQ(s.cell_order, Layout::kColMajor);
  EXPECT_EQ(s.capacity, 100000u);
  ASSERT_EQ(s.dimensions.size(), 2u);
  for (const Dimension& d : s.dimensions) {
    EXPECT_EQ(d.type, Datatype::kInt32);  // the one domain datatype
    EXPECT_EQ(d.cell_val_num, 1u);
    EXPECT_EQ(As<int32_t>(d.domain.lo), 0);
    EXPECT_EQ(As<int32_t>(d.domain.hi), 10000);
    EXPECT_EQ(As<int32_t>(*d.tile_extent), 10001);
  }
  EXPECT_EQ(s.dimensions[1].name, "d2");
  ASSERT_EQ(s.attributes.size(), 1u);
  EXPECT_EQ(s.attributes[0].fill_value, Le<int32_t>({INT32_MIN}));  // default fill
  EXPECT_FALSE(s.attributes[0].nullable);
  ASSERT_EQ(s.offsets_filters.filters.size(), 1u);
  EXPECT_EQ(s.offsets_filters.filters[0].type, FilterType::kZstd);
  EXPECT_TRUE(s.validity_filters.empty());
}

// ---- Every format version, hand-built ----

TEST(ArraySchemaParse, EveryVersionOneToTwentyThree) {
  for (uint32_t v = 1; v <= 23; ++v) {
    SCOPED_TRACE("version " + std::to_string(v));
    SchemaSpec spec;
    spec.version = v;
    spec.allows_dups = v >= 5;
    spec.attrs = {AttrSpec{.name = "a",
                           .fill = Le<int32_t>({7}),
                           .nullable = v >= 7,
                           .fill_validity = 1,
                           .order = static_cast<uint8_t>(v >= 17 ? 1 : 0)},
                  AttrSpec{.name = "s", .type = 12, .cell_val_num = kVarNum, .fill = {'n', 'o'}}};
    if (v >= 18) spec.labels = {LabelSpec{}};
    if (v >= 20) {
      spec.attrs[1].enumeration = "e";
      spec.enums = {{"e", "__abc_0"}};
    }
    if (v >= 22) {
      spec.cd_empty = false;
      spec.cd_ranges = {Le<int64_t>({5, 50})};
    }
    auto r = ParseArraySchema(BuildSchema(spec), 0, DefaultLimits());
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    const ArraySchema& s = *r;
    EXPECT_EQ(s.version, v);
    EXPECT_EQ(s.allows_dups, v >= 5);
    ASSERT_EQ(s.dimensions.size(), 1u);
    EXPECT_EQ(s.dimensions[0].type, Datatype::kInt64);
    EXPECT_EQ(As<int64_t>(s.dimensions[0].domain.hi), 100);
    EXPECT_EQ(As<int64_t>(*s.dimensions[0].tile_extent), 10);
    ASSERT_EQ(s.attributes.size(), 2u);
    const Attribute& a = s.attributes[0];
    const Attribute& str = s.attributes[1];
    if (v >= 6) {
      EXPECT_EQ(a.fill_value, Le<int32_t>({7}));
      EXPECT_EQ(str.fill_value, (ByteVec{'n', 'o'}));
    } else {
      EXPECT_EQ(a.fill_value, Le<int32_t>({INT32_MIN}));
      EXPECT_EQ(str.fill_value, ByteVec{0});
    }
    EXPECT_EQ(a.nullable, v >= 7);
    EXPECT_EQ(a.fill_value_validity, v >= 7 ? 1 : 0);
    EXPECT_EQ(a.order, v >= 17 ? 1 : 0);
    EXPECT_EQ(s.labels.size(), v >= 18 ? 1u : 0u);
    EXPECT_EQ(s.enumerations.size(), v >= 20 ? 1u : 0u);
    EXPECT_EQ(str.enumeration_name.has_value(), v >= 20);
    EXPECT_EQ(s.current_domain.empty, v < 22);
    EXPECT_EQ(s.validity_filters.empty(), true);
  }
}

TEST(ArraySchemaParse, LegacyDomainDatatypeAppliesToEveryDimension) {
  SchemaSpec spec;
  spec.version = 4;
  spec.legacy_type = 9;  // UINT32
  spec.dims = {DimSpec{.name = "x", .domain = Le<uint32_t>({0, 9}), .extent = Le<uint32_t>({5})},
               DimSpec{.name = "y", .domain = Le<uint32_t>({3, 4}), .extent = std::nullopt}};
  auto r = ParseArraySchema(BuildSchema(spec), 0, DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->dimensions[0].type, Datatype::kUInt32);
  EXPECT_EQ(r->dimensions[1].type, Datatype::kUInt32);
  EXPECT_EQ(As<uint32_t>(r->dimensions[1].domain.lo), 3u);
  EXPECT_FALSE(r->dimensions[1].tile_extent.has_value());
}

TEST(ArraySchemaParse, DefaultFillValuesPerType) {
  EXPECT_EQ(DefaultFillValue(Datatype::kInt8, 1), ByteVec{0x80});
  EXPECT_EQ(DefaultFillValue(Datatype::kUInt8, 1), ByteVec{0xff});
  EXPECT_EQ(DefaultFillValue(Datatype::kInt16, 3), Le<int16_t>({INT16_MIN, INT16_MIN, INT16_MIN}));
  EXPECT_EQ(DefaultFillValue(Datatype::kUInt64, 1), Le<uint64_t>({UINT64_MAX}));
  EXPECT_EQ(DefaultFillValue(Datatype::kInt32, kVarNum), Le<int32_t>({INT32_MIN}));
  EXPECT_EQ(DefaultFillValue(Datatype::kChar, 4), (ByteVec{0x80, 0x80, 0x80, 0x80}));
  EXPECT_EQ(DefaultFillValue(Datatype::kStringAscii, kVarNum), ByteVec{0});
  EXPECT_EQ(DefaultFillValue(Datatype::kStringUtf16, kVarNum), (ByteVec{0, 0}));
  EXPECT_EQ(DefaultFillValue(Datatype::kBool, 1), ByteVec{0});
  EXPECT_EQ(DefaultFillValue(Datatype::kBlob, kVarNum), ByteVec{0});
  EXPECT_EQ(DefaultFillValue(Datatype::kDatetimeDay, 1), Le<int64_t>({INT64_MIN}));
  EXPECT_EQ(DefaultFillValue(Datatype::kTimeNs, 1), Le<int64_t>({INT64_MIN}));
  EXPECT_EQ(DefaultFillValue(Datatype::kFloat32, 1), (ByteVec{0x00, 0x00, 0xc0, 0x7f}));
  EXPECT_EQ(DefaultFillValue(Datatype::kFloat64, 1), (ByteVec{0, 0, 0, 0, 0, 0, 0xf8, 0x7f}));
}

TEST(ArraySchemaParse, DimensionLabels) {
  SchemaSpec spec;
  spec.version = 18;
  spec.dims = {DimSpec{.name = "x"}, DimSpec{.name = "y"}};
  spec.labels = {LabelSpec{.dim = 1,
                           .name = "ylab",
                           .relative = false,
                           .uri = "s3://b/l",
                           .attr = "lab",
                           .order = 2,
                           .type = 11,
                           .cell_val_num = kVarNum,
                           .external = true}};
  auto r = ParseArraySchema(BuildSchema(spec), 0, DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->labels.size(), 1u);
  const DimensionLabel& l = r->labels[0];
  EXPECT_EQ(l.dimension_index, 1u);
  EXPECT_EQ(l.name, "ylab");
  EXPECT_FALSE(l.relative_uri);
  EXPECT_EQ(l.uri, "s3://b/l");
  EXPECT_EQ(l.attribute_name, "lab");
  EXPECT_EQ(l.label_order, 2);
  EXPECT_EQ(l.type, Datatype::kStringAscii);
  EXPECT_EQ(l.cell_val_num, kVarNum);
  EXPECT_TRUE(l.is_external);

  spec.labels[0].dim = 2;  // only two dimensions
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "dimension index 2");
  spec.labels[0].dim = 0;
  spec.labels[0].order = 3;
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "label.order");
}

TEST(ArraySchemaParse, CurrentDomainOnStringDimension) {
  SchemaSpec spec;
  spec.version = 22;
  spec.dims = {
      DimSpec{
          .name = "k", .type = 11, .cell_val_num = kVarNum, .domain = {}, .extent = std::nullopt},
      DimSpec{.name = "n"}};
  spec.cd_empty = false;
  spec.cd_ranges = {VarRange("apple", "pear"), Le<int64_t>({2, 3})};
  auto r = ParseArraySchema(BuildSchema(spec), 0, DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->current_domain.ranges.size(), 2u);
  EXPECT_EQ(ToString(r->current_domain.ranges[0].lo), "apple");
  EXPECT_EQ(ToString(r->current_domain.ranges[0].hi), "pear");
  EXPECT_EQ(As<int64_t>(r->current_domain.ranges[1].hi), 3);

  // A lower-bound size past the range size is corrupt.
  testing::ByteWriter w;
  w.Put<uint64_t>(3).Put<uint64_t>(4).PutString("abc");
  spec.cd_ranges[0] = w.bytes();
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "range_start_size");

  // A newer current domain version is unsupported.
  spec.cd_ranges[0] = VarRange("a", "b");
  spec.cd_version = 1;
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kUnsupported,
              "current_domain.version");
}

// ---- Rejections ----

TEST(ArraySchemaParse, EveryTruncationOfRealPayloadsIsCorrupt) {
  const std::vector<Bytes> payloads = {
      Span(testdata::kEnumerationsT2Schema), Span(testdata::kCurrentDomainT2Schema),
      Span(testdata::kSparseStrdimSchema), Span(testdata::kLegacyV11Schema),
      Span(testdata::kLegacyV1Schema)};
  for (Bytes p : payloads) {
    for (size_t n = 0; n < p.size(); ++n) {
      auto r = ParseArraySchema(p.first(n), 1000, DefaultLimits());
      ASSERT_FALSE(r.ok()) << "prefix of " << n << " of " << p.size() << " bytes parsed";
      EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt) << r.error().ToString();
      EXPECT_NE(r.error().message().find("offset"), std::string::npos) << r.error().message();
    }
  }
}

TEST(ArraySchemaParse, EveryTruncationOfHandBuiltV23IsCorrupt) {
  SchemaSpec spec;
  spec.version = 23;
  spec.dims = {
      DimSpec{
          .name = "k", .type = 11, .cell_val_num = kVarNum, .domain = {}, .extent = std::nullopt},
      DimSpec{.name = "n", .zstd = true}};
  spec.attrs[0].enumeration = "e";
  spec.enums = {{"e", "__x_0"}};
  spec.labels = {LabelSpec{}};
  spec.cd_empty = false;
  spec.cd_ranges = {VarRange("a", "zz"), Le<int64_t>({1, 2})};
  ByteVec full = BuildSchema(spec);
  ASSERT_TRUE(ParseArraySchema(full, 0, DefaultLimits()).ok());
  for (size_t n = 0; n < full.size(); ++n) {
    auto r = ParseArraySchema(Bytes(full).first(n), 0, DefaultLimits());
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt) << r.error().ToString();
  }
  full.push_back(0);
  ExpectError(ParseArraySchema(full, 0, DefaultLimits()), ErrorCode::kCorrupt, "trailing");
}

// Deterministic mutations of real payloads: parsing and rendering never
// crash (run under the sanitizers in CI), whatever the verdict.
TEST(ArraySchemaParse, MutatedPayloadsNeverCrash) {
  const std::vector<Bytes> payloads = {
      Span(testdata::kEnumerationsT2Schema), Span(testdata::kCurrentDomainT2Schema),
      Span(testdata::kSparseStrdimSchema), Span(testdata::kLegacyV11Schema),
      Span(testdata::kLegacyV1Schema)};
  std::mt19937 rng(12345);
  int parsed = 0;
  for (Bytes p : payloads) {
    for (int iter = 0; iter < 3000; ++iter) {
      ByteVec m(p.begin(), p.end());
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < flips; ++k) {
        size_t at = rng() % m.size();
        m[at] = (rng() % 3 == 0) ? 0xff : static_cast<uint8_t>(rng());
      }
      auto r = ParseArraySchema(m, 0, DefaultLimits());
      if (!r.ok()) continue;
      ++parsed;
      // A legacy cell_val_num may legitimately ask for a fill of many MiB;
      // rendering that is valid but slow, so such schemas are only parsed.
      bool big = false;
      for (const Attribute& a : r->attributes) big = big || a.fill_value.size() > 4096;
      if (big) continue;
      EXPECT_FALSE(SchemaToJson(*r, nullptr).empty());
      EXPECT_FALSE(SchemaToText(*r, nullptr).empty());
    }
  }
  EXPECT_GT(parsed, 0);
}

TEST(ArraySchemaParse, BadEnumBytesAreCorrupt) {
  ByteVec p = Copy(Span(testdata::kEnumerationsT2Schema));
  ByteVec bad = p;
  bad[5] = 7;  // array type
  ExpectError(ParseArraySchema(bad, 100, DefaultLimits()), ErrorCode::kCorrupt,
              "offset 105: schema.array_type: bad array type 7");
  bad = p;
  bad[6] = 2;  // tile order
  ExpectError(ParseArraySchema(bad, 0, DefaultLimits()), ErrorCode::kCorrupt, "tile_order");
  bad = p;
  bad[7] = 3;  // cell order: unordered is not a cell order
  ExpectError(ParseArraySchema(bad, 0, DefaultLimits()), ErrorCode::kCorrupt, "cell_order");
  bad = p;
  bad[4] = 2;  // allows dups
  ExpectError(ParseArraySchema(bad, 0, DefaultLimits()), ErrorCode::kCorrupt, "allows_dups");

  SchemaSpec spec;
  spec.attrs[0].order = 3;
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "attribute.order");

  // Nullable byte 5 (after the fill value 0x5a5a5a5a).
  spec = SchemaSpec{};
  spec.attrs[0].fill = Le<uint32_t>({0x5a5a5a5a});
  spec.attrs[0].nullable = true;
  ByteVec b = BuildSchema(spec);
  b[Find(b, Le<uint32_t>({0x5a5a5a5a})) + 4] = 5;
  ExpectError(ParseArraySchema(b, 0, DefaultLimits()), ErrorCode::kCorrupt, "attribute.nullable");

  // Null tile extent flag 2.
  spec = SchemaSpec{};
  spec.dims[0].domain = Le<int64_t>({1, 0x5a5a5a5a});
  b = BuildSchema(spec);
  b[Find(b, Le<int64_t>({0x5a5a5a5a})) + 8] = 2;
  ExpectError(ParseArraySchema(b, 0, DefaultLimits()), ErrorCode::kCorrupt, "null_tile_extent");

  // Current domain type 1 does not exist.
  spec = SchemaSpec{};
  spec.cd_empty = false;
  spec.cd_ranges = {Le<int64_t>({1, 2})};
  b = BuildSchema(spec);
  b[b.size() - 17] = 1;
  ExpectError(ParseArraySchema(b, 0, DefaultLimits()), ErrorCode::kCorrupt, "current_domain.type");
}

TEST(ArraySchemaParse, UnknownDatatypeIsUnsupported) {
  SchemaSpec spec;
  spec.attrs[0].type = 200;
  auto r = ParseArraySchema(BuildSchema(spec), 0, DefaultLimits());
  ExpectError(r, ErrorCode::kUnsupported, "attribute.datatype");
  ExpectError(r, ErrorCode::kUnsupported, "attribute 0");
  spec = SchemaSpec{};
  spec.dims[0].type = 99;
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kUnsupported,
              "dimension.datatype");
}

TEST(ArraySchemaParse, VersionsOutsideOneToTwentyThree) {
  SchemaSpec spec;
  spec.version = 24;
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kUnsupported,
              "format version 24 is newer than 23");
  ByteVec p = Copy(Span(testdata::kEnumerationsT2Schema));
  p[0] = 0xff, p[1] = 0xff, p[2] = 0xff, p[3] = 0xff;
  ExpectError(ParseArraySchema(p, 0, DefaultLimits()), ErrorCode::kUnsupported, "4294967295");
  p[0] = 0, p[1] = 0, p[2] = 0, p[3] = 0;
  ExpectError(ParseArraySchema(p, 0, DefaultLimits()), ErrorCode::kCorrupt, "schema.version");
  spec.version = 23;
  EXPECT_TRUE(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()).ok());
}

TEST(ArraySchemaParse, AllocationTrackerSeesAllocations) {
  if (!kAllocsTracked) GTEST_SKIP() << "operator new belongs to the sanitizer";
  g_largest_alloc = 0;
  g_track_allocs = true;
  auto v = std::make_unique<std::vector<uint8_t>>(100000);
  g_track_allocs = false;
  EXPECT_GE(g_largest_alloc, 100000u);
}

TEST(ArraySchemaParse, OversizedLengthsAllocateNothing) {
  // The name length of dimension "i" sits right after the dimension count.
  ByteVec p = Copy(Span(testdata::kEnumerationsT2Schema));
  size_t at = 0;
  for (size_t i = 0; i + 5 < p.size(); ++i) {
    if (p[i] == 1 && p[i + 1] == 0 && p[i + 2] == 0 && p[i + 3] == 0 && p[i + 4] == 'i') {
      at = i;
      break;
    }
  }
  ASSERT_GT(at, 0u);
  p[at] = p[at + 1] = p[at + 2] = p[at + 3] = 0xff;
  g_largest_alloc = 0;
  g_track_allocs = true;
  auto r = ParseArraySchema(p, 0, DefaultLimits());
  g_track_allocs = false;
  ExpectError(r, ErrorCode::kCorrupt, "dimension.name: need 4294967295 bytes");
  EXPECT_TRUE(!kAllocsTracked || g_largest_alloc < 4096u) << g_largest_alloc;

  // A fill value size of 2^63.
  SchemaSpec spec;
  spec.attrs[0].type = 12;  // var STRING_UTF8: any fill size is allowed
  spec.attrs[0].cell_val_num = kVarNum;
  spec.attrs[0].fill = {'Z', 'Z', 'Z', 'Z'};
  ByteVec b = BuildSchema(spec);
  size_t fill = Find(b, {'Z', 'Z', 'Z', 'Z'});
  ASSERT_GE(fill, 8u);
  b[fill - 1] = 0x80;
  g_largest_alloc = 0;
  g_track_allocs = true;
  auto r2 = ParseArraySchema(b, 0, DefaultLimits());
  g_track_allocs = false;
  ExpectError(r2, ErrorCode::kCorrupt, "attribute.fill_value: need 9223372036854775812 bytes");
  EXPECT_TRUE(!kAllocsTracked || g_largest_alloc < 4096u) << g_largest_alloc;

  // A URI length of 2^64-1 in a dimension label.
  spec = SchemaSpec{};
  spec.labels = {LabelSpec{.uri = "QQQQ"}};
  b = BuildSchema(spec);
  size_t uri = Find(b, {'Q', 'Q', 'Q', 'Q'});
  for (size_t i = uri - 8; i < uri; ++i) b[i] = 0xff;
  g_largest_alloc = 0;
  g_track_allocs = true;
  auto r3 = ParseArraySchema(b, 0, DefaultLimits());
  g_track_allocs = false;
  ExpectError(r3, ErrorCode::kCorrupt, "label.uri");
  EXPECT_TRUE(!kAllocsTracked || g_largest_alloc < 4096u) << g_largest_alloc;
}

TEST(ArraySchemaParse, HugeLegacyCellGetsOneFillValueNotAllocated) {
  SchemaSpec spec;
  spec.version = 5;        // no stored fill value: it would be made from cell_val_num
  spec.attrs[0].type = 1;  // INT64
  spec.attrs[0].cell_val_num = 0x7fffffff;
  g_largest_alloc = 0;
  g_track_allocs = true;
  auto r = ParseArraySchema(BuildSchema(spec), 0, DefaultLimits());
  g_track_allocs = false;
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->attributes[0].fill_value.size(), 8u);  // INT64 minimum, repeated by readers
  EXPECT_TRUE(!kAllocsTracked || g_largest_alloc < 4096u) << g_largest_alloc;
  spec.attrs[0].cell_val_num = 1000;
  r = ParseArraySchema(BuildSchema(spec), 0, DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->attributes[0].fill_value.size(), 8000u);
  // The cap is the caller's Limits::max_default_fill_bytes.
  Limits small;
  small.max_default_fill_bytes = 4096;
  r = ParseArraySchema(BuildSchema(spec), 0, small);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->attributes[0].fill_value.size(), 8u);
}

TEST(ArraySchemaParse, AttributeCountBeyondPayload) {
  SchemaSpec spec;
  spec.attrs.clear();
  ByteVec b = BuildSchema(spec);
  // attribute count = 0 sits before labels(4) + enums(4) + cd(5).
  size_t at = b.size() - 13 - 4;
  b[at] = b[at + 1] = b[at + 2] = b[at + 3] = 0xff;
  ExpectError(ParseArraySchema(b, 0, DefaultLimits()), ErrorCode::kCorrupt, "schema.attribute_num");
}

TEST(ArraySchemaParse, InconsistentSchemasAreCorrupt) {
  SchemaSpec spec;
  spec.attrs[0].fill = Le<int64_t>({1});  // 8 bytes for an INT32 cell
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "fill_value_size: 8");

  spec = SchemaSpec{};
  spec.attrs[0].fill = {};
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "fill_value_size: 0");

  spec = SchemaSpec{};
  spec.attrs[0].name = "d";  // same as the dimension
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "duplicate");

  spec = SchemaSpec{};
  spec.attrs[0].enumeration = "missing";
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "unknown enumeration");

  spec = SchemaSpec{};
  spec.enums = {{"e", "../../etc"}};
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "bad name");

  spec = SchemaSpec{};
  spec.dims[0].domain = Le<int64_t>({100, 1});
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "lower bound above");

  spec = SchemaSpec{};
  spec.dims[0].domain = Le<int64_t>({1, 2, 3});
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "domain_size: 24");

  spec = SchemaSpec{};
  spec.array_type = 0;
  spec.dims[0].type = 3;  // FLOAT64 in a dense array
  spec.dims[0].domain = Le<double>({0, 1});
  spec.dims[0].extent = Le<double>({1});
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "dense arrays");

  spec = SchemaSpec{};
  spec.dims[0].cell_val_num = 2;
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "cell_val_num");

  spec = SchemaSpec{};
  spec.attrs[0].cell_val_num = 0;
  ExpectError(ParseArraySchema(BuildSchema(spec), 0, DefaultLimits()), ErrorCode::kCorrupt,
              "cell_val_num: 0");
}

}  // namespace
}  // namespace tiledbfs::core
