// Every fragment of every corpus array (legacy arrays and group members
// included) against TileDB's own fragment info (expected/<name>/fragments.json).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/tile/generic_tile.h"
#include "tests/core/fragment/fragment_test_util.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;
using fragment_testing::CorpusDir;
using fragment_testing::SchemaMap;
using Json = nlohmann::json;

struct CorpusArray {
  std::string rel;  // "dense_1d", "group/sub/c_arr"
  std::shared_ptr<LocalStorage> storage;
  SchemaMap schemas;
  std::optional<EncryptionKey> key;
  struct Frag {
    std::string dir;
    TimestampedName name;
  };
  std::vector<Frag> fragments;
  Json expected;  // fragments.json (null if absent)

  const EncryptionKey* key_ptr() const { return key ? &*key : nullptr; }
};

std::optional<EncryptionKey> KeyFor(const std::string& rel) {
  std::ifstream f(CorpusDir() + "/arrays/" + rel + ".key");
  if (!f.good()) return std::nullopt;
  std::string hex;
  f >> hex;
  EncryptionKey k;
  for (size_t i = 0; i < 32; ++i) k.bytes[i] = std::stoi(hex.substr(2 * i, 2), nullptr, 16);
  return k;
}

bool IsArray(const fs::path& p) {
  return fs::exists(p / "__schema") || fs::exists(p / "__array_schema.tdb");
}

void FindArrays(const fs::path& root, const std::string& rel, std::vector<std::string>* out) {
  if (IsArray(root)) {
    out->push_back(rel);
    return;
  }
  if (!fs::exists(root / "__tiledb_group.tdb") && !rel.empty()) return;
  for (const auto& e : fs::directory_iterator(root)) {
    if (!e.is_directory()) continue;
    std::string name = e.path().filename().string();
    if (name.rfind("__", 0) == 0) continue;
    FindArrays(e.path(), rel.empty() ? name : rel + "/" + name, out);
  }
}

CorpusArray OpenArray(const std::string& rel) {
  CorpusArray a;
  a.rel = rel;
  const fs::path root = CorpusDir() + "/arrays/" + rel;
  auto st = LocalStorage::Open(root.string());
  EXPECT_TRUE(st.ok());
  a.storage = *st;
  a.key = KeyFor(rel);
  std::vector<std::string> schema_files;
  if (fs::exists(root / "__array_schema.tdb")) schema_files.push_back("__array_schema.tdb");
  if (fs::exists(root / "__schema")) {
    for (const auto& e : fs::directory_iterator(root / "__schema")) {
      if (e.is_regular_file()) schema_files.push_back("__schema/" + e.path().filename().string());
    }
  }
  for (const auto& path : schema_files) {
    auto s = LoadArraySchema(*a.storage, path, a.key_ptr(), DefaultLimits());
    EXPECT_TRUE(s.ok()) << rel << "/" << path << ": " << (s.ok() ? "" : s.error().ToString());
    if (!s.ok()) continue;
    std::string name = fs::path(path).filename().string();
    s->name = name;
    a.schemas[name] = std::make_shared<const ArraySchema>(std::move(*s));
  }
  auto add_frags = [&](const fs::path& dir, const std::string& prefix) {
    if (!fs::exists(dir)) return;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.is_directory() || !fs::exists(e.path() / "__fragment_metadata.tdb")) continue;
      std::string name = e.path().filename().string();
      a.fragments.push_back({prefix + name, fragment_testing::ParsedName(name)});
    }
  };
  add_frags(root / "__fragments", "__fragments/");
  add_frags(root, "");
  std::sort(a.fragments.begin(), a.fragments.end(),
            [](const auto& x, const auto& y) { return x.dir < y.dir; });
  std::ifstream ef(CorpusDir() + "/expected/" + rel + "/fragments.json");
  if (ef.good()) a.expected = Json::parse(ef);
  return a;
}

std::vector<std::string> AllArrays() {
  std::vector<std::string> out;
  FindArrays(CorpusDir() + "/arrays", "", &out);
  std::sort(out.begin(), out.end());
  return out;
}

const Json* ExpectedFragment(const CorpusArray& a, const std::string& name) {
  if (a.expected.is_null()) return nullptr;
  for (const auto& f : a.expected["fragments"]) {
    if (f["name"] == name) return &f;
  }
  return nullptr;
}

// Compares one coordinate (bytes of the dimension's type) with a JSON value.
void ExpectCoord(const Dimension& d, const ByteVec& bytes, const Json& j, const std::string& ctx) {
  if (d.var()) {
    EXPECT_EQ(std::string(bytes.begin(), bytes.end()), j.get<std::string>()) << ctx;
    return;
  }
  if (IsFloat(d.type)) {
    double v = 0;
    if (d.type == Datatype::kFloat32) {
      float f;
      std::memcpy(&f, bytes.data(), 4);
      v = f;
    } else {
      std::memcpy(&v, bytes.data(), 8);
    }
    EXPECT_EQ(v, j.get<double>()) << ctx;
    return;
  }
  auto value = DimensionValue(d.type, bytes);
  ASSERT_TRUE(value.ok()) << ctx;
  if (j.is_number_unsigned()) {
    EXPECT_EQ(static_cast<uint64_t>(*value), j.get<uint64_t>()) << ctx;
  } else {
    EXPECT_EQ(static_cast<int64_t>(*value), j.get<int64_t>()) << ctx;
  }
}

void ExpectNdRange(const ArraySchema& s, const std::vector<Range>& got, const Json& want,
                   const std::string& ctx) {
  ASSERT_EQ(got.size(), want.size()) << ctx;
  for (size_t d = 0; d < got.size(); ++d) {
    ExpectCoord(s.dimensions[d], got[d].lo, want[d][0], ctx + " dim " + std::to_string(d) + " lo");
    ExpectCoord(s.dimensions[d], got[d].hi, want[d][1], ctx + " dim " + std::to_string(d) + " hi");
  }
}

// Every field the fragment stores data for: tile offsets load, locate tiles
// inside the files, and the last one ends where the file does.
void CheckTileLayout(const CorpusArray& a, const FragmentMetadata& m, const std::string& ctx) {
  const ArraySchema& s = m.schema();
  std::vector<FieldRef> fields;
  for (uint32_t i = 0; i < s.attributes.size(); ++i) fields.push_back(FieldRef::Attribute(i));
  for (uint32_t i = 0; i < s.dimensions.size(); ++i) fields.push_back(FieldRef::Dimension(i));
  fields.push_back(FieldRef::Coords());
  fields.push_back(FieldRef::Timestamps());
  fields.push_back(FieldRef::DeleteTimestamps());
  fields.push_back(FieldRef::DeleteConditionIndex());
  for (FieldRef f : fields) {
    const int idx = m.FieldIndex(f);
    if (idx < 0) continue;
    const std::string fctx = ctx + " field " + std::to_string(idx);
    if (HasTileMetadata(m.version())) {
      auto stats = m.Stats(f);
      ASSERT_TRUE(stats.ok()) << fctx << ": " << stats.error().ToString();
      EXPECT_EQ((*stats)->mins.size(), (*stats)->maxs.size()) << fctx;
    }
    auto offsets = m.TileOffsets(f);
    ASSERT_TRUE(offsets.ok()) << fctx << ": " << offsets.error().ToString();
    const uint64_t file_size = m.footer().file_sizes[idx];
    if (file_size == 0) {
      // A slot without data (coords 5+, dimensions of dense fragments):
      // TileDB still writes tile_num zero offsets.
      for (uint64_t o : **offsets) EXPECT_EQ(o, 0u) << fctx;
      EXPECT_FALSE(a.storage->Exists(m.DataFile(f))) << fctx;
      continue;
    }
    ASSERT_EQ((*offsets)->size(), m.tile_num()) << fctx;
    auto on_disk = a.storage->Size(m.DataFile(f));
    ASSERT_TRUE(on_disk.ok()) << fctx << " " << m.DataFile(f);
    EXPECT_EQ(*on_disk, file_size) << fctx;
    uint64_t total = 0;
    for (uint64_t t = 0; t < m.tile_num(); ++t) {
      auto loc = m.FixedTile(f, t);
      ASSERT_TRUE(loc.ok()) << fctx << ": " << loc.error().ToString();
      EXPECT_EQ(loc->offset, total) << fctx;
      total += loc->size;
    }
    EXPECT_EQ(total, file_size) << fctx;
    EXPECT_EQ(m.FixedTile(f, m.tile_num()).error().code(), ErrorCode::kInvalidArgument);

    bool var = false;
    bool nullable = false;
    if (f.kind == FieldRef::Kind::kAttribute) {
      var = s.attributes[f.index].var();
      nullable = s.attributes[f.index].nullable;
    } else if (f.kind == FieldRef::Kind::kDimension) {
      var = s.dimensions[f.index].var();
    }
    if (var) {
      auto var_offsets = m.TileVarOffsets(f);
      ASSERT_TRUE(var_offsets.ok()) << fctx << ": " << var_offsets.error().ToString();
      auto var_sizes = m.TileVarSizes(f);
      ASSERT_TRUE(var_sizes.ok()) << fctx << ": " << var_sizes.error().ToString();
      EXPECT_EQ((*var_sizes)->size(), m.tile_num()) << fctx;
      auto var_disk = a.storage->Size(m.VarFile(f));
      ASSERT_TRUE(var_disk.ok()) << fctx << " " << m.VarFile(f);
      EXPECT_EQ(*var_disk, m.footer().file_var_sizes[idx]) << fctx;
      uint64_t vtotal = 0;
      for (uint64_t t = 0; t < m.tile_num(); ++t) {
        auto loc = m.VarTile(f, t);
        ASSERT_TRUE(loc.ok()) << fctx << ": " << loc.error().ToString();
        EXPECT_EQ(loc->offset, vtotal);
        vtotal += loc->size;
      }
      EXPECT_EQ(vtotal, *var_disk) << fctx;
    } else {
      EXPECT_EQ(m.footer().file_var_sizes[idx], 0u) << fctx;
    }
    if (nullable) {
      auto vloc = m.ValidityTile(f, m.tile_num() - 1);
      ASSERT_TRUE(vloc.ok()) << fctx << ": " << vloc.error().ToString();
      auto disk = a.storage->Size(m.ValidityFile(f));
      ASSERT_TRUE(disk.ok()) << fctx << " " << m.ValidityFile(f);
      EXPECT_EQ(vloc->offset + vloc->size, *disk) << fctx;
    }
  }
}

TEST(CorpusFragments, EveryFragmentMatchesTileDB) {
  size_t checked = 0, compared = 0;
  for (const std::string& rel : AllArrays()) {
    CorpusArray a = OpenArray(rel);
    for (const auto& fr : a.fragments) {
      const std::string ctx = rel + "/" + fr.dir;
      auto loaded = FragmentMetadata::Load(a.storage, fr.dir, fr.name, a.schemas, a.key_ptr(),
                                           DefaultLimits());
      ASSERT_TRUE(loaded.ok()) << ctx << ": " << loaded.error().ToString();
      const FragmentMetadata& m = **loaded;
      ++checked;
      EXPECT_FALSE(m.has_consolidated_footer());
      EXPECT_EQ(m.schema().name, m.footer().array_schema_name) << ctx;
      CheckTileLayout(a, m, ctx);
      if (HasFragmentStatistics(m.version())) {
        auto fs = m.FragmentStatistics();
        ASSERT_TRUE(fs.ok()) << ctx << ": " << fs.error().ToString();
        EXPECT_EQ((*fs)->size(), m.FieldCount()) << ctx;
      }
      auto conditions = m.ProcessedConditions();
      ASSERT_TRUE(conditions.ok()) << ctx << ": " << conditions.error().ToString();
      const Json* want = ExpectedFragment(a, fr.name.name);
      if (want == nullptr) continue;
      ++compared;
      EXPECT_EQ(m.version(), (*want)["version"].get<uint32_t>()) << ctx;
      EXPECT_EQ(m.dense(), (*want)["dense"].get<bool>()) << ctx;
      EXPECT_EQ(m.cell_num(), (*want)["cell_num"].get<uint64_t>()) << ctx;
      EXPECT_EQ(m.footer().array_schema_name, (*want)["array_schema_name"].get<std::string>())
          << ctx;
      auto size = m.FragmentSize();
      ASSERT_TRUE(size.ok()) << ctx;
      EXPECT_EQ(*size, (*want)["fragment_size"].get<uint64_t>()) << ctx;
      ExpectNdRange(m.schema(), m.footer().non_empty_domain, (*want)["non_empty_domain"],
                    ctx + " non-empty domain");
      if (want->contains("mbrs")) {
        auto mbrs = m.Mbrs();
        ASSERT_TRUE(mbrs.ok()) << ctx << ": " << mbrs.error().ToString();
        ASSERT_EQ((*mbrs)->size(), (*want)["mbr_num"].get<uint64_t>()) << ctx;
        for (size_t i = 0; i < (*mbrs)->size(); ++i) {
          ExpectNdRange(m.schema(), (**mbrs)[i], (*want)["mbrs"][i],
                        ctx + " mbr " + std::to_string(i));
        }
      }
    }
  }
  EXPECT_GE(checked, 40u);
  EXPECT_GE(compared, 38u);
}

TEST(CorpusFragments, Dense1dTileOffsetsLocateRealTiles) {
  CorpusArray a = OpenArray("dense_1d");
  ASSERT_EQ(a.fragments.size(), 1u);
  auto m = FragmentMetadata::Load(a.storage, a.fragments[0].dir, a.fragments[0].name, a.schemas,
                                  nullptr, DefaultLimits());
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  EXPECT_TRUE((*m)->dense());
  EXPECT_EQ((*m)->tile_num(), 10u);  // [1,100] in tiles of 10
  EXPECT_EQ((*m)->TileCellNum(3), 10u);
  EXPECT_EQ((*m)->cell_num(), 100u);
  EXPECT_EQ((*m)->FieldCount(), 3u);  // a, __coords, x
  EXPECT_EQ((*m)->FieldIndex(FieldRef::Dimension(0)), 2);
  EXPECT_EQ((*m)->DataFile(FieldRef::Attribute(0)), a.fragments[0].dir + "/a0.tdb");
  // Dense fragments store no coordinates: the dimension slot has only zero
  // offsets and a zero file size.
  auto dim_offsets = (*m)->TileOffsets(FieldRef::Dimension(0));
  ASSERT_TRUE(dim_offsets.ok());
  EXPECT_EQ(**dim_offsets, std::vector<uint64_t>(10, 0));
  EXPECT_EQ((*m)->footer().file_sizes[2], 0u);
  const std::string file = (*m)->DataFile(FieldRef::Attribute(0));
  for (uint64_t t = 0; t < 10; ++t) {
    auto loc = (*m)->FixedTile(FieldRef::Attribute(0), t);
    ASSERT_TRUE(loc.ok()) << loc.error().ToString();
    auto bytes = a.storage->Read(file, loc->offset, loc->size);
    ASSERT_TRUE(bytes.ok());
    // An unfiltered tile: one chunk of 10 INT32 cells, a = x*x - 50*x.
    ByteReader r(*bytes);
    EXPECT_EQ(*r.Read<uint64_t>("chunks"), 1u);
    EXPECT_EQ(*r.Read<uint32_t>("original"), 40u);
    EXPECT_EQ(*r.Read<uint32_t>("filtered"), 40u);
    EXPECT_EQ(*r.Read<uint32_t>("metadata"), 0u);
    for (int64_t i = 0; i < 10; ++i) {
      const int64_t x = static_cast<int64_t>(t) * 10 + i + 1;
      EXPECT_EQ(*r.Read<int32_t>("cell"), x * x - 50 * x) << "tile " << t << " cell " << i;
    }
    EXPECT_TRUE(r.empty());
  }
  // Dense fragments have an empty R-tree.
  auto mbrs = (*m)->Mbrs();
  ASSERT_TRUE(mbrs.ok());
  EXPECT_TRUE((*mbrs)->empty());
}

TEST(CorpusFragments, DenseGridWithNegativeLowsAndMixedExtents) {
  CorpusArray a = OpenArray("dense_colmajor");
  ASSERT_EQ(a.fragments.size(), 3u);
  for (const auto& fr : a.fragments) {
    auto m =
        FragmentMetadata::Load(a.storage, fr.dir, fr.name, a.schemas, nullptr, DefaultLimits());
    ASSERT_TRUE(m.ok()) << m.error().ToString();
    const DenseTileGrid& g = (*m)->dense_grid();
    EXPECT_EQ(g.cells_per_tile, 12u);  // 4 x 3
    EXPECT_EQ(g.tile_num, g.tiles_per_dim[0] * g.tiles_per_dim[1]);
    if ((*m)->cell_num() == 192) {  // x [-5,10], y [-3,7]
      EXPECT_EQ(g.first_tile, (std::vector<uint64_t>{0, 0}));
      EXPECT_EQ(g.tiles_per_dim, (std::vector<uint64_t>{4, 4}));
    }
  }
}

TEST(CorpusFragments, SparseStatisticsAndConditions) {
  CorpusArray a = OpenArray("sparse_2d");
  ASSERT_FALSE(a.fragments.empty());
  auto m = FragmentMetadata::Load(a.storage, a.fragments[0].dir, a.fragments[0].name, a.schemas,
                                  nullptr, DefaultLimits());
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  const FragmentMetadata& f = **m;
  EXPECT_FALSE(f.dense());
  EXPECT_EQ(f.schema().capacity, 4u);
  EXPECT_EQ(f.tile_num(), 5u);  // 20 cells, capacity 4
  EXPECT_EQ(f.TileCellNum(0), 4u);
  // Tile statistics of attribute a (INT32): min <= max in every tile.
  auto stats = f.Stats(FieldRef::Attribute(0));
  ASSERT_TRUE(stats.ok()) << stats.error().ToString();
  ASSERT_EQ((*stats)->mins.size(), f.tile_num());
  ASSERT_EQ((*stats)->maxs.size(), f.tile_num());
  for (size_t t = 0; t < f.tile_num(); ++t) {
    int32_t lo, hi;
    std::memcpy(&lo, (*stats)->mins[t].data(), 4);
    std::memcpy(&hi, (*stats)->maxs[t].data(), 4);
    EXPECT_LE(lo, hi);
  }
  // The var attribute s has string mins and maxes.
  auto sstats = f.Stats(FieldRef::Attribute(1));
  ASSERT_TRUE(sstats.ok()) << sstats.error().ToString();
  auto fstats = f.FragmentStatistics();
  ASSERT_TRUE(fstats.ok()) << fstats.error().ToString();
  EXPECT_EQ((*fstats)->size(), f.FieldCount());
  auto conditions = f.ProcessedConditions();
  ASSERT_TRUE(conditions.ok()) << conditions.error().ToString();
  EXPECT_TRUE((*conditions)->empty());
  // Each section loads once: the same pointer every time, from any thread.
  const std::vector<uint64_t>* first = *f.TileOffsets(FieldRef::Attribute(0));
  std::vector<std::thread> threads;
  std::vector<const std::vector<uint64_t>*> seen(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] { seen[i] = *f.TileVarSizes(FieldRef::Attribute(1)); });
  }
  for (auto& t : threads) t.join();
  for (auto* p : seen) EXPECT_EQ(p, seen[0]);
  EXPECT_EQ(*f.TileOffsets(FieldRef::Attribute(0)), first);
}

TEST(CorpusFragments, EncryptedSectionsNeedTheKey) {
  CorpusArray a = OpenArray("encrypted");
  ASSERT_TRUE(a.key.has_value());
  ASSERT_FALSE(a.fragments.empty());
  // The footer is a plain blob: it loads without the key...
  auto m = FragmentMetadata::Load(a.storage, a.fragments[0].dir, a.fragments[0].name, a.schemas,
                                  nullptr, DefaultLimits());
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  // ...but the sections are encrypted generic tiles.
  auto offsets = (*m)->TileOffsets(FieldRef::Attribute(0));
  ASSERT_FALSE(offsets.ok());
  EXPECT_EQ(offsets.error().code(), ErrorCode::kKey);
  auto keyed = FragmentMetadata::Load(a.storage, a.fragments[0].dir, a.fragments[0].name, a.schemas,
                                      a.key_ptr(), DefaultLimits());
  ASSERT_TRUE(keyed.ok());
  auto ok = (*keyed)->TileOffsets(FieldRef::Attribute(0));
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ((*ok)->size(), (*keyed)->tile_num());
}

TEST(CorpusFragments, LegacyV1Fragment) {
  CorpusArray a = OpenArray("legacy_non_split_coords_v1_4_0");
  ASSERT_EQ(a.fragments.size(), 1u);
  EXPECT_EQ(a.fragments[0].name.ImpliedFormatVersion(), 2u);
  auto m = FragmentMetadata::Load(a.storage, a.fragments[0].dir, a.fragments[0].name, a.schemas,
                                  nullptr, DefaultLimits());
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  const FragmentMetadata& f = **m;
  EXPECT_EQ(f.version(), 1u);
  EXPECT_FALSE(f.dense());  // it has __coords.tdb
  EXPECT_EQ(f.footer().array_schema_name, kLegacySchemaName);
  EXPECT_EQ(f.FieldCount(), 2u);  // a, __coords
  EXPECT_EQ(f.FieldIndex(FieldRef::Coords()), 1);
  EXPECT_EQ(f.FieldIndex(FieldRef::Dimension(0)), -1);
  EXPECT_EQ(f.DataFile(FieldRef::Attribute(0)), a.fragments[0].dir + "/a.tdb");
  EXPECT_EQ(f.DataFile(FieldRef::Coords()), a.fragments[0].dir + "/__coords.tdb");
  EXPECT_EQ(f.DataFile(FieldRef::Dimension(0)), "");
  EXPECT_EQ(f.footer().file_sizes, (std::vector<uint64_t>{36, 64}));
  EXPECT_EQ(f.footer().file_var_sizes, (std::vector<uint64_t>{0, 0}));
  auto coords = f.FixedTile(FieldRef::Coords(), 0);
  ASSERT_TRUE(coords.ok()) << coords.error().ToString();
  EXPECT_EQ(coords->offset, 0u);
  EXPECT_EQ(coords->size, 64u);
  EXPECT_EQ(f.TileValidityOffsets(FieldRef::Attribute(0)).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(f.Stats(FieldRef::Attribute(0)).error().code(), ErrorCode::kNotFound);
  auto conditions = f.ProcessedConditions();
  ASSERT_TRUE(conditions.ok());
  EXPECT_TRUE((*conditions)->empty());
}

TEST(CorpusFragments, ConsolidatedFragmentMetadataFile) {
  CorpusArray a = OpenArray("commits_consolidated");
  const std::string dir = CorpusDir() + "/arrays/commits_consolidated/__fragment_meta";
  std::string meta_file;
  for (const auto& e : fs::directory_iterator(dir)) {
    meta_file = "__fragment_meta/" + e.path().filename().string();
  }
  auto footers = LoadConsolidatedFragmentMeta(*a.storage, meta_file, nullptr, DefaultLimits());
  ASSERT_TRUE(footers.ok()) << footers.error().ToString();
  ASSERT_EQ(footers->size(), 5u);
  size_t matched = 0;
  for (const ConsolidatedFooter& c : *footers) {
    EXPECT_EQ(c.name, c.fragment_name);  // format 9+: plain folder names
    const CorpusArray::Frag* fr = nullptr;
    for (const auto& f : a.fragments) {
      if (f.name.name == c.fragment_name) fr = &f;
    }
    if (fr == nullptr) continue;  // the t1 fragment was deleted (delete_fragments)
    ++matched;
    auto from = FragmentMetadata::FromFooter(a.storage, fr->dir, fr->name, c.footer, c.offset,
                                             a.schemas, nullptr, DefaultLimits());
    ASSERT_TRUE(from.ok()) << from.error().ToString();
    auto own =
        FragmentMetadata::Load(a.storage, fr->dir, fr->name, a.schemas, nullptr, DefaultLimits());
    ASSERT_TRUE(own.ok());
    EXPECT_TRUE((*from)->has_consolidated_footer());
    const FragmentFooter& x = (*from)->footer();
    const FragmentFooter& y = (*own)->footer();
    EXPECT_EQ(x.version, y.version);
    EXPECT_EQ(x.array_schema_name, y.array_schema_name);
    EXPECT_EQ(x.non_empty_domain, y.non_empty_domain);
    EXPECT_EQ(x.file_sizes, y.file_sizes);
    EXPECT_EQ(x.tile_offsets_offsets, y.tile_offsets_offsets);
    EXPECT_EQ(x.processed_conditions_offset, y.processed_conditions_offset);
    EXPECT_EQ(x.footer_size + 8, y.footer_size);  // no length field in the .meta file
    EXPECT_EQ((*from)->cell_num(), (*own)->cell_num());
    auto size = (*from)->FragmentSize();
    ASSERT_TRUE(size.ok());
    const Json* want = ExpectedFragment(a, fr->name.name);
    ASSERT_NE(want, nullptr);
    EXPECT_TRUE((*want)["has_consolidated_metadata"].get<bool>());
    EXPECT_EQ(*size, (*want)["fragment_size"].get<uint64_t>());
    // Lazy sections come from the fragment's own file.
    auto offsets = (*from)->TileOffsets(FieldRef::Attribute(0));
    ASSERT_TRUE(offsets.ok()) << offsets.error().ToString();
    EXPECT_EQ(**offsets, **(*own)->TileOffsets(FieldRef::Attribute(0)));
  }
  EXPECT_EQ(matched, 4u);
}

TEST(CorpusFragments, MissingSchemaIsNotFound) {
  CorpusArray a = OpenArray("sparse_2d");
  auto m = FragmentMetadata::Load(a.storage, a.fragments[0].dir, a.fragments[0].name, {}, nullptr,
                                  DefaultLimits());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(m.error().message().find("__1700000000000_1700000000000_704f686ac4f95122cb45ca0bcc"),
            std::string::npos)
      << m.error().message();
  EXPECT_NE(m.error().message().find("__fragment_metadata.tdb"), std::string::npos);
}

}  // namespace
}  // namespace tiledbfs::core
