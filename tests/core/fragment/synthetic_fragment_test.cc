// Fragment metadata files of every format version 1..23, laid out field by
// field as TileDB writes them (fragment_test_util.h), loaded through
// MemoryStorage: footer location (computed size before 10, length field
// otherwise), field indexing, data file names and every lazy section.
#include <gtest/gtest.h>

#include "core/fragment/legacy_fragment_metadata.h"
#include "tests/core/fragment/fragment_test_util.h"

namespace tiledbfs::core {
namespace {

using namespace fragment_testing;

const char* kSchemaName = "__1700000000000_1700000000000_00000000000000000000000000000abc";

struct Loaded {
  std::shared_ptr<MemoryStorage> storage;
  std::string dir;
  SchemaMap schemas;
  Result<std::shared_ptr<FragmentMetadata>> md = Error::Corrupt("not loaded");
};

Loaded LoadSynthetic(SyntheticFragment& sf, bool write_data_files = false) {
  sf.Build();
  Loaded l;
  l.storage = std::make_shared<MemoryStorage>();
  const std::string name = FragmentName(sf.version);
  l.dir = HasFragmentFooter(sf.version) && sf.version >= 12 ? "__fragments/" + name : name;
  l.storage->Put(l.dir + "/__fragment_metadata.tdb", sf.file);
  if (write_data_files && !sf.dense && !HasPerDimensionFiles(sf.version)) {
    l.storage->Put(l.dir + "/__coords.tdb", ByteVec(16, 0));
  }
  l.schemas[sf.schema.name] = std::make_shared<const ArraySchema>(sf.schema);
  l.md = FragmentMetadata::Load(l.storage, l.dir, ParsedName(name), l.schemas, nullptr,
                                DefaultLimits());
  return l;
}

SyntheticFragment Sparse(uint32_t version, bool var_dim = false) {
  SyntheticFragment sf;
  sf.version = version;
  sf.schema = SparseSchema(version, HasSchemaName(version) ? kSchemaName : kLegacySchemaName);
  if (var_dim) sf.schema.dimensions[1] = VarDim("key");
  sf.has_timestamps = HasTimestampsFlag(version);
  sf.has_delete_meta = HasDeleteMetaFlag(version);
  sf.processed_conditions = {"__1_1_aaaa_16.del", "__2_2_bbbb_16.del"};
  sf.FillDefaults();
  return sf;
}

class EveryVersion : public ::testing::TestWithParam<uint32_t> {};

TEST_P(EveryVersion, SparseFragmentLoadsAndSectionsResolve) {
  const uint32_t v = GetParam();
  SyntheticFragment sf = Sparse(v);
  Loaded l = LoadSynthetic(sf);
  ASSERT_TRUE(l.md.ok()) << "version " << v << ": " << l.md.error().ToString();
  const FragmentMetadata& m = **l.md;
  const FragmentFooter& f = m.footer();
  EXPECT_EQ(f.version, v);
  EXPECT_EQ(f.array_schema_name, sf.schema.name);
  EXPECT_FALSE(f.dense);
  EXPECT_EQ(f.non_empty_domain, sf.ned);
  EXPECT_EQ(f.has_timestamps, HasTimestampsFlag(v));
  EXPECT_EQ(f.has_delete_meta, HasDeleteMetaFlag(v));
  EXPECT_EQ(f.footer_size, sf.file.size() - sf.footer_offset);

  // Field layout: a0, a1, __coords, d0, d1, [t], [dt, dci].
  const uint64_t n = HasPerDimensionFiles(v) ? 5 + (v >= 14) + 2 * (v >= 15) : 3;
  EXPECT_EQ(m.FieldCount(), n);
  EXPECT_EQ(m.FieldIndex(FieldRef::Attribute(1)), 1);
  EXPECT_EQ(m.FieldIndex(FieldRef::Attribute(2)), -1);
  EXPECT_EQ(m.FieldIndex(FieldRef::Coords()), 2);
  EXPECT_EQ(m.FieldIndex(FieldRef::Dimension(1)), HasPerDimensionFiles(v) ? 4 : -1);
  EXPECT_EQ(m.FieldIndex(FieldRef::Timestamps()), v >= 14 ? 5 : -1);
  EXPECT_EQ(m.FieldIndex(FieldRef::DeleteTimestamps()), v >= 15 ? 6 : -1);
  EXPECT_EQ(m.FieldIndex(FieldRef::DeleteConditionIndex()), v >= 15 ? 7 : -1);
  EXPECT_EQ(f.file_sizes.size(), n);
  EXPECT_EQ(f.file_var_sizes.size(), n);
  EXPECT_EQ(f.file_validity_sizes.size(), HasValiditySections(v) ? n : 0);
  EXPECT_EQ(f.tile_offsets_offsets, sf.expected.tile_offsets_offsets);
  EXPECT_EQ(f.tile_var_offsets_offsets, sf.expected.tile_var_offsets_offsets);
  EXPECT_EQ(f.tile_var_sizes_offsets, sf.expected.tile_var_sizes_offsets);
  EXPECT_EQ(f.tile_validity_offsets_offsets, sf.expected.tile_validity_offsets_offsets);
  EXPECT_EQ(f.tile_min_offsets, sf.expected.tile_min_offsets);
  EXPECT_EQ(f.tile_null_count_offsets, sf.expected.tile_null_count_offsets);
  EXPECT_EQ(f.fragment_min_max_sum_null_count_offset,
            sf.expected.fragment_min_max_sum_null_count_offset);
  EXPECT_EQ(f.processed_conditions_offset, sf.expected.processed_conditions_offset);
  if (!HasFooterLength(v)) {
    auto size = FixedFooterSize(sf.schema, v);
    ASSERT_TRUE(size.ok());
    EXPECT_EQ(*size, sf.footer_fields_size);
  }

  // Tiles: 3 sparse tiles, capacity 4, last tile 2 cells.
  EXPECT_EQ(m.tile_num(), 3u);
  EXPECT_EQ(m.TileCellNum(0), 4u);
  EXPECT_EQ(m.TileCellNum(2), 2u);
  EXPECT_EQ(m.cell_num(), 10u);
  auto offsets = m.TileOffsets(FieldRef::Attribute(0));
  ASSERT_TRUE(offsets.ok()) << offsets.error().ToString();
  EXPECT_EQ(**offsets, (std::vector<uint64_t>{0, 16, 32}));
  auto loc = m.FixedTile(FieldRef::Attribute(0), 2);
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc->offset, 32u);
  EXPECT_EQ(loc->size, 16u);
  auto vloc = m.VarTile(FieldRef::Attribute(1), 1);
  ASSERT_TRUE(vloc.ok()) << vloc.error().ToString();
  EXPECT_EQ(vloc->offset, 32u);
  EXPECT_EQ(vloc->size, 32u);
  auto sizes = m.TileVarSizes(FieldRef::Attribute(1));
  ASSERT_TRUE(sizes.ok());
  EXPECT_EQ(**sizes, (std::vector<uint64_t>{40, 40, 40}));
  auto coords_or_dim = HasPerDimensionFiles(v) ? FieldRef::Dimension(0) : FieldRef::Coords();
  auto dloc = m.FixedTile(coords_or_dim, 1);
  ASSERT_TRUE(dloc.ok()) << dloc.error().ToString();
  EXPECT_EQ(dloc->offset, 16u);

  auto validity = m.ValidityTile(FieldRef::Attribute(1), 2);
  if (HasValiditySections(v)) {
    ASSERT_TRUE(validity.ok()) << validity.error().ToString();
    EXPECT_EQ(validity->offset, 16u);
    EXPECT_EQ(validity->size, 8u);
  } else {
    EXPECT_EQ(validity.error().code(), ErrorCode::kNotFound);
  }

  auto mbrs = m.Mbrs();
  ASSERT_TRUE(mbrs.ok()) << mbrs.error().ToString();
  EXPECT_EQ(**mbrs, sf.mbrs);

  auto stats = m.Stats(FieldRef::Attribute(0));
  auto sstats = m.Stats(FieldRef::Attribute(1));
  if (HasTileMetadata(v)) {
    ASSERT_TRUE(stats.ok()) << stats.error().ToString();
    EXPECT_EQ((*stats)->mins[2], Le<int32_t>(2));
    EXPECT_EQ((*stats)->maxs[1], Le<int32_t>(101));
    EXPECT_EQ((*stats)->sums, (std::vector<uint64_t>{1000, 1001, 1002}));
    ASSERT_TRUE(sstats.ok()) << sstats.error().ToString();
    EXPECT_EQ((*sstats)->mins[1], ByteVec({'m', '1'}));
    EXPECT_EQ((*sstats)->maxs[2], ByteVec({'x', 'x', '2'}));
    EXPECT_EQ((*sstats)->null_counts, (std::vector<uint64_t>{0, 1, 2}));
    EXPECT_TRUE((*sstats)->sums.empty());
  } else {
    EXPECT_EQ(stats.error().code(), ErrorCode::kNotFound);
  }
  auto fstats = m.FragmentStatistics();
  if (HasFragmentStatistics(v)) {
    ASSERT_TRUE(fstats.ok()) << fstats.error().ToString();
    ASSERT_EQ((*fstats)->size(), n);
    EXPECT_EQ((**fstats)[0].max, Le<int32_t>(102));
    EXPECT_EQ((**fstats)[0].sum, 3003u);
    EXPECT_EQ((**fstats)[n - 1].null_count, n - 1);
  } else {
    EXPECT_EQ(fstats.error().code(), ErrorCode::kNotFound);
  }
  auto conditions = m.ProcessedConditions();
  ASSERT_TRUE(conditions.ok()) << conditions.error().ToString();
  if (HasProcessedConditions(v)) {
    EXPECT_EQ(**conditions, sf.processed_conditions);
  } else {
    EXPECT_TRUE((*conditions)->empty());
  }
  auto size = m.FragmentSize();
  ASSERT_TRUE(size.ok());
  uint64_t want = sf.file.size();
  for (auto* a : {&sf.file_sizes, &sf.file_var_sizes}) {
    for (uint64_t s : *a) want += s;
  }
  if (HasValiditySections(v)) {
    for (uint64_t s : sf.file_validity_sizes) want += s;
  }
  EXPECT_EQ(*size, want);
}

INSTANTIATE_TEST_SUITE_P(Fragment, EveryVersion, ::testing::Range(3u, 24u));

class VarDimVersions : public ::testing::TestWithParam<uint32_t> {};

// With a var-sized dimension the footer ends with its length before 10 too.
TEST_P(VarDimVersions, FooterLengthFieldAndVarRanges) {
  const uint32_t v = GetParam();
  SyntheticFragment sf = Sparse(v, /*var_dim=*/true);
  Loaded l = LoadSynthetic(sf);
  ASSERT_TRUE(l.md.ok()) << "version " << v << ": " << l.md.error().ToString();
  const FragmentMetadata& m = **l.md;
  EXPECT_TRUE(FooterHasLengthField(sf.schema, v));
  EXPECT_EQ(m.footer().footer_size, sf.footer_fields_size + 8);
  EXPECT_EQ(m.footer().non_empty_domain[1], RS("a0", "b9"));
  auto mbrs = m.Mbrs();
  ASSERT_TRUE(mbrs.ok()) << mbrs.error().ToString();
  EXPECT_EQ(**mbrs, sf.mbrs);
  EXPECT_EQ(m.VarFile(FieldRef::Dimension(1)),
            l.dir + (HasNumberedDataFiles(v) ? "/d1_var.tdb" : "/key_var.tdb"));
}

INSTANTIATE_TEST_SUITE_P(Fragment, VarDimVersions, ::testing::Range(5u, 24u));

TEST(SyntheticFragment, DataFileNamesPerVersion) {
  for (uint32_t v : {5u, 7u, 8u, 9u, 14u, 15u}) {
    SyntheticFragment sf = Sparse(v);
    sf.schema.attributes[0].name = "a,b<c>|d";
    sf.schema.dimensions[0].name = "row/x";
    Loaded l = LoadSynthetic(sf);
    ASSERT_TRUE(l.md.ok()) << l.md.error().ToString();
    const FragmentMetadata& m = **l.md;
    const std::string d = l.dir + "/";
    if (v >= 9) {
      EXPECT_EQ(m.DataFile(FieldRef::Attribute(0)), d + "a0.tdb");
      EXPECT_EQ(m.VarFile(FieldRef::Attribute(1)), d + "a1_var.tdb");
      EXPECT_EQ(m.ValidityFile(FieldRef::Attribute(1)), d + "a1_validity.tdb");
      EXPECT_EQ(m.DataFile(FieldRef::Dimension(0)), d + "d0.tdb");
    } else if (v == 8) {
      EXPECT_EQ(m.DataFile(FieldRef::Attribute(0)), d + "a%2Cb%20c%2D%3Cd.tdb");
      EXPECT_EQ(m.DataFile(FieldRef::Dimension(0)), d + "row%2Fx.tdb");
      EXPECT_EQ(m.VarFile(FieldRef::Attribute(1)), d + "s_var.tdb");
    } else {
      EXPECT_EQ(m.DataFile(FieldRef::Attribute(0)), d + "a,b<c>|d.tdb");
      EXPECT_EQ(m.DataFile(FieldRef::Dimension(0)), d + "row/x.tdb");
    }
    EXPECT_EQ(m.DataFile(FieldRef::Timestamps()), v >= 14 ? d + "t.tdb" : "");
    EXPECT_EQ(m.DataFile(FieldRef::DeleteTimestamps()), v >= 15 ? d + "dt.tdb" : "");
    EXPECT_EQ(m.DataFile(FieldRef::DeleteConditionIndex()), v >= 15 ? d + "dci.tdb" : "");
  }
}

TEST(SyntheticFragment, TimestampsWithoutDeleteMeta) {
  SyntheticFragment sf = Sparse(22);
  sf.has_timestamps = true;
  sf.has_delete_meta = false;
  sf.FillDefaults();
  Loaded l = LoadSynthetic(sf);
  ASSERT_TRUE(l.md.ok()) << l.md.error().ToString();
  EXPECT_EQ((*l.md)->FieldCount(), 6u);
  EXPECT_EQ((*l.md)->FieldIndex(FieldRef::Timestamps()), 5);
  EXPECT_EQ((*l.md)->FieldIndex(FieldRef::DeleteTimestamps()), -1);
}

TEST(SyntheticFragment, DenseVersion3ComputesTilesFromTheGrid) {
  SyntheticFragment sf;
  sf.version = 3;
  sf.dense = true;
  sf.schema = SparseSchema(3, kLegacySchemaName);
  sf.schema.array_type = ArrayType::kDense;
  sf.ned = {R<int32_t>(5, 25), R<int32_t>(1, 10)};  // tiles 0..2 x 0..0
  sf.tile_num = 3;
  sf.last_tile_cell_num = 100;
  sf.FillDefaults();
  Loaded l = LoadSynthetic(sf);
  ASSERT_TRUE(l.md.ok()) << l.md.error().ToString();
  const FragmentMetadata& m = **l.md;
  EXPECT_TRUE(m.dense());
  EXPECT_EQ(m.tile_num(), 3u);
  EXPECT_EQ(m.TileCellNum(2), 100u);
  EXPECT_EQ(m.cell_num(), 300u);
  EXPECT_EQ(m.dense_grid().first_tile, (std::vector<uint64_t>{0, 0}));
  auto loc = m.FixedTile(FieldRef::Attribute(0), 1);
  ASSERT_TRUE(loc.ok()) << loc.error().ToString();
  EXPECT_EQ(loc->offset, 16u);
}

TEST(SyntheticFragment, LegacyVersions1And2) {
  for (uint32_t v : {1u, 2u}) {
    for (bool dense : {false, true}) {
      ArraySchema s = SparseSchema(v, kLegacySchemaName);
      s.attributes.pop_back();
      s.attributes.push_back(Attr("s", Datatype::kStringAscii, true));
      if (dense) s.array_type = ArrayType::kDense;
      ByteWriter w;
      w.Put<uint32_t>(v).Put<uint64_t>(16);
      w.Put<int32_t>(1).Put<int32_t>(20).Put<int32_t>(1).Put<int32_t>(10);
      const uint64_t mbrs = dense ? 0 : 2;
      w.Put<uint64_t>(mbrs);
      for (uint64_t i = 0; i < mbrs; ++i) {
        w.Put<int32_t>(1 + i).Put<int32_t>(20).Put<int32_t>(1).Put<int32_t>(10);
      }
      w.Put<uint64_t>(1).Put<int32_t>(1).Put<int32_t>(1).Put<int32_t>(20).Put<int32_t>(10);
      const uint64_t tiles = dense ? 2 : 2;
      PutList(PutList(w, {0, 10}), {0, 12});
      PutList(w, dense ? std::vector<uint64_t>{} : std::vector<uint64_t>{0, 20});
      PutList(PutList(w, {}), {0, 50});   // var offsets of a, s
      PutList(PutList(w, {}), {60, 70});  // var sizes of a, s
      w.Put<uint64_t>(3);                 // last tile cell num
      PutU64s(PutU64s(w, {20, 24, dense ? 0u : 40u}), {0, 100});
      ByteVec payload = w.Take();

      auto storage = std::make_shared<MemoryStorage>();
      const std::string dir = FragmentName(v);
      storage->Put(dir + "/__fragment_metadata.tdb", MakeGenericTile(payload, v));
      if (!dense) storage->Put(dir + "/__coords.tdb", ByteVec(40, 0));
      SchemaMap schemas{{kLegacySchemaName, std::make_shared<const ArraySchema>(s)}};
      auto m =
          FragmentMetadata::Load(storage, dir, ParsedName(dir), schemas, nullptr, DefaultLimits());
      ASSERT_TRUE(m.ok()) << m.error().ToString();
      EXPECT_EQ((*m)->version(), v);
      EXPECT_EQ((*m)->dense(), dense);
      EXPECT_EQ((*m)->footer().non_empty_domain,
                (std::vector<Range>{R<int32_t>(1, 20), R<int32_t>(1, 10)}));
      EXPECT_EQ((*m)->tile_num(), tiles);  // dense: [1,20] in tiles of 10
      EXPECT_EQ((*m)->cell_num(), dense ? 200u : 7u);
      EXPECT_EQ((*m)->footer().file_var_sizes, (std::vector<uint64_t>{0, 100, 0}));
      auto var = (*m)->VarTile(FieldRef::Attribute(1), 1);
      ASSERT_TRUE(var.ok()) << var.error().ToString();
      EXPECT_EQ(var->offset, 50u);
      EXPECT_EQ(var->size, 50u);
      auto sizes = (*m)->TileVarSizes(FieldRef::Attribute(1));
      ASSERT_TRUE(sizes.ok());
      EXPECT_EQ(**sizes, (std::vector<uint64_t>{60, 70}));
      auto mbr = (*m)->Mbrs();
      ASSERT_TRUE(mbr.ok());
      EXPECT_EQ((*mbr)->size(), mbrs);
      EXPECT_EQ((*m)->DataFile(FieldRef::Attribute(1)), dir + "/s.tdb");
      EXPECT_EQ((*m)->VarFile(FieldRef::Attribute(1)), dir + "/s_var.tdb");

      // Every truncation of the payload is rejected as corrupt.
      for (size_t k = 0; k < payload.size(); ++k) {
        auto r = ParseLegacyFragmentMetadata(Bytes(payload).first(k), 0, s, dense);
        ASSERT_FALSE(r.ok()) << "prefix " << k;
        EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt) << "prefix " << k;
      }
    }
  }
}

TEST(SyntheticFragment, FromFooterOfEveryVersion) {
  for (uint32_t v = 3; v <= 23; ++v) {
    SyntheticFragment sf = Sparse(v);
    sf.Build();
    auto storage = std::make_shared<MemoryStorage>();
    const std::string dir = FragmentName(v);
    storage->Put(dir + "/__fragment_metadata.tdb", sf.file);
    SchemaMap schemas{{sf.schema.name, std::make_shared<const ArraySchema>(sf.schema)}};
    // The consolidated form: the fields without the length, then other bytes.
    ByteVec footer(sf.file.begin() + sf.footer_offset,
                   sf.file.begin() + sf.footer_offset + sf.footer_fields_size);
    footer.push_back(0xAB);
    auto m = FragmentMetadata::FromFooter(storage, dir, ParsedName(dir), footer, 1234, schemas,
                                          nullptr, DefaultLimits());
    ASSERT_TRUE(m.ok()) << v << ": " << m.error().ToString();
    EXPECT_TRUE((*m)->has_consolidated_footer());
    EXPECT_EQ((*m)->footer().footer_size, sf.footer_fields_size);
    auto offsets = (*m)->TileOffsets(FieldRef::Attribute(0));
    ASSERT_TRUE(offsets.ok()) << offsets.error().ToString();
    EXPECT_EQ((*offsets)->size(), 3u);
    auto size = (*m)->FragmentSize();
    ASSERT_TRUE(size.ok());
  }
  // Format 1-2 fragments have no footer to consolidate.
  auto storage = std::make_shared<MemoryStorage>();
  auto m = FragmentMetadata::FromFooter(storage, FragmentName(2), ParsedName(FragmentName(2)),
                                        ByteVec(16, 0), 0, {}, nullptr, DefaultLimits());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), ErrorCode::kInvalidArgument);
}

TEST(SyntheticFragment, OptionalSections) {
  SyntheticFragment sf = Sparse(23);
  sf.unknown_optional_section = true;
  sf.global_order_section = true;
  Loaded l = LoadSynthetic(sf);
  ASSERT_TRUE(l.md.ok()) << l.md.error().ToString();
  const FragmentFooter& f = (*l.md)->footer();
  EXPECT_TRUE(f.has_tile_global_order_bounds);
  EXPECT_EQ(f.tile_global_order_min_offsets, (std::vector<uint64_t>{500, 501}));
  EXPECT_EQ(f.tile_global_order_max_offsets, (std::vector<uint64_t>{502, 503}));
}

TEST(SyntheticFragment, HostileTileOffsetCountAllocatesNothing) {
  SyntheticFragment sf = Sparse(22);
  // Attribute 0's tile offsets tile claims 2^60 entries.
  ByteWriter hostile;
  hostile.Put<uint64_t>(uint64_t{1} << 60).Put<uint64_t>(0);
  sf.override_tile_offsets0 = hostile.Take();
  Loaded l = LoadSynthetic(sf);
  ASSERT_TRUE(l.md.ok()) << l.md.error().ToString();
  const FragmentMetadata& m = **l.md;
  auto offsets = m.TileOffsets(FieldRef::Attribute(0));
  ASSERT_FALSE(offsets.ok());
  EXPECT_EQ(offsets.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(offsets.error().message().find("tile offsets"), std::string::npos)
      << offsets.error().message();
  EXPECT_NE(offsets.error().message().find("__fragment_metadata.tdb"), std::string::npos);
  // A failed load is retried, and fails the same way; tiles cannot be located.
  EXPECT_FALSE(m.TileOffsets(FieldRef::Attribute(0)).ok());
  EXPECT_EQ(m.FixedTile(FieldRef::Attribute(0), 0).error().code(), ErrorCode::kCorrupt);
  // Other sections are unaffected.
  EXPECT_TRUE(m.TileOffsets(FieldRef::Attribute(1)).ok());
}

TEST(SyntheticFragment, SectionOffsetPastTheFooterIsCorrupt) {
  SyntheticFragment sf = Sparse(22);
  Loaded l = LoadSynthetic(sf);
  ASSERT_TRUE(l.md.ok());
  // Rebuild with the R-tree offset pointing into the footer.
  FragmentFooter f = (*l.md)->footer();
  ByteVec file = sf.file;
  // The R-tree offset follows the schema name, flags, NED, counts and the
  // three size arrays; find it by value (0) right after the validity sizes.
  const uint64_t n = (*l.md)->FieldCount();
  const uint64_t at =
      sf.footer_offset + 4 + 8 + sf.schema.name.size() + 2 + 16 + 8 + 8 + 1 + 1 + 3 * n * 8;
  uint64_t current;
  std::memcpy(&current, file.data() + at, 8);
  ASSERT_EQ(current, f.rtree_offset);
  const uint64_t bad = sf.footer_offset + 4;
  std::memcpy(file.data() + at, &bad, 8);
  l.storage->Put(l.dir + "/__fragment_metadata.tdb", file);
  auto m = FragmentMetadata::Load(l.storage, l.dir, ParsedName(FragmentName(22)), l.schemas,
                                  nullptr, DefaultLimits());
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  auto mbrs = (*m)->Mbrs();
  ASSERT_FALSE(mbrs.ok());
  EXPECT_EQ(mbrs.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(mbrs.error().message().find("not before the footer"), std::string::npos);
}

TEST(SyntheticFragment, TileBeyondItsFileIsCorrupt) {
  SyntheticFragment sf = Sparse(22);
  sf.FillDefaults();
  sf.file_sizes[0] = 20;  // tile 2 starts at 32
  Loaded l = LoadSynthetic(sf);
  ASSERT_TRUE(l.md.ok());
  auto ok = (*l.md)->FixedTile(FieldRef::Attribute(0), 0);
  ASSERT_TRUE(ok.ok());
  auto bad = (*l.md)->FixedTile(FieldRef::Attribute(0), 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(bad.error().message().find("outside its file"), std::string::npos);
}

// A fragment of one tile: that tile is each file from 0 to its size in the
// footer (TileDB writes tile offsets from 0), located without loading the
// tile offsets, so without the metadata file when the footer came from a
// consolidated file. Other tiles, and fragments of several tiles, still
// read the section.
TEST(SyntheticFragment, OneTileFragmentLocatesItsTileWithoutTileOffsets) {
  SyntheticFragment sf = Sparse(22);
  sf.tile_num = 1;
  sf.last_tile_cell_num = 3;
  sf.FillDefaults();
  // A section that is not what TileDB writes ([7]) shows it is not read.
  ByteWriter odd;
  odd.Put<uint64_t>(1).Put<uint64_t>(7);
  sf.override_tile_offsets0 = odd.Take();
  sf.Build();
  auto storage = std::make_shared<MemoryStorage>();
  const std::string dir = "__fragments/" + FragmentName(22);
  SchemaMap schemas{{sf.schema.name, std::make_shared<const ArraySchema>(sf.schema)}};
  ByteVec footer(sf.file.begin() + sf.footer_offset,
                 sf.file.begin() + sf.footer_offset + sf.footer_fields_size);
  // No __fragment_metadata.tdb in storage at all.
  auto m = FragmentMetadata::FromFooter(storage, dir, ParsedName(FragmentName(22)), footer, 0,
                                        schemas, nullptr, DefaultLimits());
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  const FragmentMetadata& f = **m;
  ASSERT_EQ(f.tile_num(), 1u);
  auto a = f.FixedTile(FieldRef::Attribute(0), 0);
  ASSERT_TRUE(a.ok()) << a.error().ToString();
  EXPECT_EQ(a->offset, 0u);
  EXPECT_EQ(a->size, 16u);
  auto r = f.FixedTile(FieldRef::Dimension(0), 0);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->size, 16u);
  auto s = f.FixedTile(FieldRef::Attribute(1), 0);  // var: its offsets file
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->size, 16u);
  auto sv = f.VarTile(FieldRef::Attribute(1), 0);
  ASSERT_TRUE(sv.ok()) << sv.error().ToString();
  EXPECT_EQ(sv->offset, 0u);
  EXPECT_EQ(sv->size, 32u);
  auto sn = f.ValidityTile(FieldRef::Attribute(1), 0);
  ASSERT_TRUE(sn.ok()) << sn.error().ToString();
  EXPECT_EQ(sn->size, 8u);
  // Other tiles and unknown fields are still errors (tile 1 needs the
  // offsets, so the missing file).
  EXPECT_FALSE(f.FixedTile(FieldRef::Attribute(0), 1).ok());
  EXPECT_EQ(f.FixedTile(FieldRef::Attribute(5), 0).error().code(), ErrorCode::kNotFound);
  // The sections themselves need the missing file.
  auto offsets = f.TileOffsets(FieldRef::Attribute(0));
  ASSERT_FALSE(offsets.ok());
  EXPECT_NE(offsets.error().message().find("__fragment_metadata.tdb"), std::string::npos)
      << offsets.error().message();

  // With the file present, the section reads as written ([7]) while the
  // tile is still [0, 16).
  storage->Put(dir + "/__fragment_metadata.tdb", sf.file);
  auto loaded = FragmentMetadata::Load(storage, dir, ParsedName(FragmentName(22)), schemas, nullptr,
                                       DefaultLimits());
  ASSERT_TRUE(loaded.ok()) << loaded.error().ToString();
  auto again = (*loaded)->FixedTile(FieldRef::Attribute(0), 0);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->offset, 0u);
  EXPECT_EQ((*loaded)->FixedTile(FieldRef::Attribute(0), 1).error().code(),
            ErrorCode::kInvalidArgument);
  auto section = (*loaded)->TileOffsets(FieldRef::Attribute(0));
  ASSERT_TRUE(section.ok()) << section.error().ToString();
  EXPECT_EQ(**section, (std::vector<uint64_t>{7}));

  // Several tiles: the offsets are read, and the odd one is what locates tile 0.
  SyntheticFragment three = Sparse(22);
  ByteWriter odd3;
  odd3.Put<uint64_t>(3).Put<uint64_t>(7).Put<uint64_t>(16).Put<uint64_t>(32);
  three.override_tile_offsets0 = odd3.Take();
  Loaded l = LoadSynthetic(three);
  ASSERT_TRUE(l.md.ok()) << l.md.error().ToString();
  auto t0 = (*l.md)->FixedTile(FieldRef::Attribute(0), 0);
  ASSERT_TRUE(t0.ok()) << t0.error().ToString();
  EXPECT_EQ(t0->offset, 7u);
  EXPECT_EQ(t0->size, 9u);
}

TEST(SyntheticFragment, TileOffsetCountMustMatchTheTiles) {
  SyntheticFragment sf = Sparse(22);
  sf.tile_offsets[0] = {0, 16};  // 2 offsets, 3 tiles
  Loaded l = LoadSynthetic(sf);
  ASSERT_TRUE(l.md.ok());
  auto offsets = (*l.md)->TileOffsets(FieldRef::Attribute(0));
  ASSERT_FALSE(offsets.ok());
  EXPECT_EQ(offsets.error().code(), ErrorCode::kCorrupt);
}

TEST(SyntheticFragment, FileTooSmallForTheComputedFooter) {
  SyntheticFragment sf = Sparse(7);
  sf.Build();
  auto storage = std::make_shared<MemoryStorage>();
  const std::string dir = FragmentName(7);
  storage->Put(dir + "/__fragment_metadata.tdb", ByteVec(sf.file.end() - 10, sf.file.end()));
  SchemaMap schemas{{kLegacySchemaName, std::make_shared<const ArraySchema>(sf.schema)}};
  auto m = FragmentMetadata::Load(storage, dir, ParsedName(dir), schemas, nullptr, DefaultLimits());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), ErrorCode::kCorrupt);
}

TEST(SyntheticFragment, FooterLengthLargerThanTheFile) {
  SyntheticFragment sf = Sparse(22);
  sf.Build();
  ByteVec file = sf.file;
  const uint64_t huge = uint64_t{1} << 62;
  std::memcpy(file.data() + file.size() - 8, &huge, 8);
  auto storage = std::make_shared<MemoryStorage>();
  const std::string dir = "__fragments/" + FragmentName(22);
  storage->Put(dir + "/__fragment_metadata.tdb", file);
  SchemaMap schemas{{sf.schema.name, std::make_shared<const ArraySchema>(sf.schema)}};
  auto m = FragmentMetadata::Load(storage, dir, ParsedName(FragmentName(22)), schemas, nullptr,
                                  DefaultLimits());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(m.error().message().find("footer length"), std::string::npos);
}

}  // namespace
}  // namespace tiledbfs::core
