#include "core/directory/array_directory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace tiledbfs::core {
namespace {

const std::string kCorpus = std::string(TILEDBFS_TEST_DATA) + "/corpus/";
const std::string kU1 = "11111111111111111111111111111111";
const std::string kU2 = "22222222222222222222222222222222";
const std::string kU3 = "33333333333333333333333333333333";
const std::string kU4 = "44444444444444444444444444444444";
const std::string kSchema = "__schema/__1_1_" + kU1;

std::shared_ptr<LocalStorage> Open(const std::string& rel) {
  auto s = LocalStorage::Open(kCorpus + "arrays/" + rel);
  EXPECT_TRUE(s.ok()) << rel;
  return s.ok() ? *s : nullptr;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return nlohmann::json::parse(f);
}

std::vector<std::string> FragmentNames(const ArrayListing& l) {
  std::vector<std::string> out;
  for (const auto& f : l.fragments) out.push_back(f.name.name);
  return out;
}

void Put(MemoryStorage* s, const std::string& path, const std::string& data = "") {
  s->Put(path, ByteVec(data.begin(), data.end()));
}

std::string Frag(uint64_t t1, uint64_t t2, const std::string& uuid, uint32_t v = 22) {
  return "__" + std::to_string(t1) + "_" + std::to_string(t2) + "_" + uuid + "_" +
         std::to_string(v);
}

// A written fragment folder (one data file is enough for the listing).
void PutFragmentDir(MemoryStorage* s, const std::string& dir) {
  Put(s, dir + "/__fragment_metadata.tdb", "x");
}

std::string Bytes8(uint64_t v) {
  std::string b(8, '\0');
  std::memcpy(b.data(), &v, 8);
  return b;
}

// Every array of the corpus (and the arrays inside the group) lists exactly
// the fragments TileDB read, plus those it would vacuum.
TEST(ListArray, CorpusMatchesTileDB) {
  std::vector<std::pair<std::string, std::string>> arrays;  // array dir, expected dir
  for (const auto& e : std::filesystem::directory_iterator(kCorpus + "arrays")) {
    if (!e.is_directory() || e.path().filename() == "group") continue;
    std::string name = e.path().filename();
    arrays.emplace_back(name, name);
  }
  arrays.emplace_back("group/dense_a", "group/dense_a");
  arrays.emplace_back("group/sparse_b", "group/sparse_b");
  arrays.emplace_back("group/sub/c_arr", "group/sub/c_arr");
  ASSERT_GE(arrays.size(), 20u);

  for (const auto& [dir, exp] : arrays) {
    SCOPED_TRACE(dir);
    auto s = Open(dir);
    ASSERT_NE(s, nullptr);
    auto l = ListArray(*s, DefaultLimits());
    ASSERT_TRUE(l.ok()) << l.error().ToString();
    nlohmann::json j = ReadJson(kCorpus + "expected/" + exp + "/fragments.json");

    std::vector<std::string> want;
    for (const auto& f : j["fragments"]) want.push_back(f["name"]);
    for (const auto& f : j["to_vacuum"]) {
      want.push_back(f.is_string() ? f.get<std::string>() : f["name"].get<std::string>());
    }
    std::vector<std::string> got = FragmentNames(*l);
    std::sort(want.begin(), want.end());
    std::vector<std::string> got_sorted = got;
    std::sort(got_sorted.begin(), got_sorted.end());
    EXPECT_EQ(got_sorted, want);
    EXPECT_TRUE(l->uncommitted.empty());
    for (const auto& f : l->fragments) EXPECT_TRUE(f.dir_exists) << f.dir;
    EXPECT_TRUE(std::is_sorted(
        l->fragments.begin(), l->fragments.end(),
        [](const FragmentEntry& a, const FragmentEntry& b) { return a.name < b.name; }));

    // The schema and metadata files TileDB saw.
    std::set<std::string> want_schemas, want_meta, got_schemas, got_meta;
    for (const auto& f : j["files"]) {
      if (f["dir"] == "__schema") want_schemas.insert(f["name"]);
      if (f["dir"] == "__meta") want_meta.insert(f["name"]);
    }
    for (const auto& sc : l->schemas) {
      if (sc.path != "__array_schema.tdb") got_schemas.insert(sc.name);
    }
    for (const auto& m : l->metadata_files) got_meta.insert(m.name);
    EXPECT_EQ(got_schemas, want_schemas);
    EXPECT_EQ(got_meta, want_meta);
    // Every vacuum entry names a fragment folder of the listing.
    std::set<std::string> dirs;
    for (const auto& f : l->fragments) dirs.insert(f.dir);
    for (const auto& v : l->fragment_vacuums) {
      for (const auto& e : v.entries) EXPECT_TRUE(dirs.count(e)) << e;
    }
  }
}

TEST(ListArray, ConsolidatedNotVacuumed) {
  auto l = ListArray(*Open("consolidated"), DefaultLimits());
  ASSERT_TRUE(l.ok()) << l.error().ToString();
  ASSERT_EQ(l->fragments.size(), 5u);
  // (t1, t2) order: the consolidated __t1_t4 after __t1_t1.
  EXPECT_EQ(l->fragments[0].name.t2, 1700000001000u);
  EXPECT_EQ(l->fragments[1].name.t1, 1700000001000u);
  EXPECT_EQ(l->fragments[1].name.t2, 1700000004000u);
  for (const auto& f : l->fragments) {
    EXPECT_EQ(f.commit, CommitKind::kWrt);
    EXPECT_EQ(f.commit_file, "__commits/" + f.name.name + ".wrt");
    EXPECT_EQ(f.dir, "__fragments/" + f.name.name);
  }
  ASSERT_EQ(l->fragment_vacuums.size(), 1u);
  const VacuumFile& v = l->fragment_vacuums[0];
  EXPECT_EQ(v.path,
            "__commits/__1700000001000_1700000004000_0948f41347d413d468b3fcd654df05d8_22.vac");
  EXPECT_EQ(v.name.t1, 1700000001000u);
  EXPECT_EQ(v.name.t2, 1700000004000u);
  ASSERT_EQ(v.entries.size(), 4u);
  EXPECT_EQ(v.entries[0], l->fragments[0].dir);
}

TEST(ListArray, CommitsConsolidated) {
  auto l = ListArray(*Open("commits_consolidated"), DefaultLimits());
  ASSERT_TRUE(l.ok()) << l.error().ToString();
  const std::string con =
      "__commits/__1700000001000_1700000005000_01c2da7b2249c52328d405950e632d65_22.con";
  ASSERT_EQ(l->fragments.size(), 5u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(l->fragments[i].commit, CommitKind::kConsolidated);
    EXPECT_EQ(l->fragments[i].commit_file, con);
  }
  EXPECT_EQ(l->fragments[4].commit, CommitKind::kWrt);
  EXPECT_EQ(l->consolidated_commit_files, std::vector<std::string>{con});
  EXPECT_EQ(l->ignore_files,
            std::vector<std::string>{
                "__commits/__1700000001000_1700000001000_29baccbe83960bb876ccf04f64ed1484_22.ign"});
  // The deleted t1 fragment: its .con entry is ignored.
  EXPECT_EQ(l->ignored, std::vector<std::string>{
                            "__fragments/"
                            "__1700000001000_1700000001000_5c540e9e93a6813e582c3d4b74770a0b_22"});
  EXPECT_EQ(l->fragment_meta_files,
            std::vector<std::string>{
                "__fragment_meta/"
                "__1700000001000_1700000005000_523705b0c6a4f98cab75723bd34dc33e_22.meta"});
  EXPECT_TRUE(l->conditions.empty());
}

TEST(ListArray, DeleteCommit) {
  auto l = ListArray(*Open("deletes"), DefaultLimits());
  ASSERT_TRUE(l.ok()) << l.error().ToString();
  ASSERT_EQ(l->conditions.size(), 1u);
  const ConditionCommit& c = l->conditions[0];
  EXPECT_EQ(c.path,
            "__commits/__1700000003000_1700000003000_7e332c5b5dbdf4325e664903f1d42a84_22.del");
  EXPECT_EQ(c.name.t1, 1700000003000u);
  EXPECT_FALSE(c.is_update);
  EXPECT_FALSE(c.in_consolidated_file);
  EXPECT_TRUE(c.contents.empty());
  EXPECT_EQ(l->fragments.size(), 3u);
}

TEST(ListArray, LegacyLayouts) {
  // TileDB 1.4: __array_schema.tdb, a __uuid_t fragment with no commit file.
  auto v14 = ListArray(*Open("legacy_non_split_coords_v1_4_0"), DefaultLimits());
  ASSERT_TRUE(v14.ok()) << v14.error().ToString();
  ASSERT_EQ(v14->schemas.size(), 1u);
  EXPECT_EQ(v14->schemas[0].path, "__array_schema.tdb");
  ASSERT_EQ(v14->fragments.size(), 1u);
  EXPECT_EQ(v14->fragments[0].dir, "__5dc2cc9cce204a189f825fd4919d0c55_1541540586869");
  EXPECT_EQ(v14->fragments[0].commit, CommitKind::kImplicit);
  EXPECT_EQ(v14->fragments[0].commit_file,
            "__5dc2cc9cce204a189f825fd4919d0c55_1541540586869/__fragment_metadata.tdb");
  EXPECT_EQ(v14->fragments[0].name.format, NameFormat::kUuidTimestamp);

  // Format 10: fragment folder and .ok in the root, schema in __schema.
  auto v10 = ListArray(*Open("legacy_zero_var_chunks_v10"), DefaultLimits());
  ASSERT_TRUE(v10.ok()) << v10.error().ToString();
  ASSERT_EQ(v10->fragments.size(), 1u);
  EXPECT_EQ(v10->fragments[0].commit, CommitKind::kOk);
  EXPECT_EQ(v10->fragments[0].dir,
            "__1693562063524_1693562063524_0fcdefaa40d34ff2a4b09153472fbdc2_10");
  EXPECT_EQ(v10->fragments[0].commit_file, v10->fragments[0].dir + ".ok");
  EXPECT_EQ(v10->fragments[0].name.version, 10u);

  auto v11 = ListArray(*Open("legacy_sparse_array_v11"), DefaultLimits());
  ASSERT_TRUE(v11.ok()) << v11.error().ToString();
  EXPECT_TRUE(v11->fragments.empty());
  EXPECT_EQ(v11->schemas.size(), 1u);
}

TEST(ListArray, SchemasAndMetadata) {
  auto se = ListArray(*Open("schema_evolution"), DefaultLimits());
  ASSERT_TRUE(se.ok());
  ASSERT_EQ(se->schemas.size(), 3u);
  EXPECT_EQ(se->schemas[0].t1, 1700000000000u);
  EXPECT_EQ(se->schemas[2].t1, 1700000004000u);
  EXPECT_EQ(se->schemas[1].path, "__schema/" + se->schemas[1].name);
  EXPECT_FALSE(se->has_enumerations_dir);

  auto en = ListArray(*Open("enumerations"), DefaultLimits());
  ASSERT_TRUE(en.ok());
  EXPECT_TRUE(en->has_enumerations_dir);
  EXPECT_EQ(en->schemas.size(), 2u);  // __enumerations is not a schema

  auto md = ListArray(*Open("metadata"), DefaultLimits());
  ASSERT_TRUE(md.ok());
  ASSERT_EQ(md->metadata_files.size(), 3u);
  EXPECT_EQ(md->metadata_files[0].t1, 1700000002000u);
  EXPECT_EQ(md->metadata_files[2].t1, 1700000004000u);
  EXPECT_TRUE(md->metadata_vacuums.empty());
}

TEST(ListArray, GroupIsNotAnArray) {
  auto l = ListArray(*Open("group"), DefaultLimits());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(l.error().message().find("not an array"), std::string::npos);
}

TEST(ListArray, UncommittedFragmentIsNotListed) {
  MemoryStorage s;
  Put(&s, kSchema, "s");
  std::string a = Frag(5, 5, kU1), b = Frag(6, 6, kU2), c = Frag(2, 2, kU3);
  PutFragmentDir(&s, "__fragments/" + a);
  PutFragmentDir(&s, "__fragments/" + b);
  PutFragmentDir(&s, "__fragments/" + c);
  // Neither a folder whose name is not a fragment's nor a file is a fragment.
  PutFragmentDir(&s, "__fragments/not_a_fragment");
  Put(&s, "__fragments/" + Frag(1, 1, kU4));
  Put(&s, "__commits/" + a + ".wrt");
  auto l = ListArray(s, DefaultLimits());
  ASSERT_TRUE(l.ok()) << l.error().ToString();
  EXPECT_EQ(FragmentNames(*l), std::vector<std::string>{a});
  EXPECT_TRUE(l->fragments[0].dir_exists);
  // Sorted by (t1, t2, uuid).
  EXPECT_EQ(l->uncommitted, (std::vector<std::string>{"__fragments/" + c, "__fragments/" + b}));
}

TEST(ListArray, ConsolidatedCommitsWithIgnoreFile) {
  MemoryStorage s;
  Put(&s, kSchema, "s");
  std::string a = Frag(1, 1, kU1), b = Frag(2, 2, kU2), c = Frag(3, 3, kU3), d = Frag(4, 4, kU4);
  for (const auto& f : {a, b, c, d}) PutFragmentDir(&s, "__fragments/" + f);
  std::string con = "__commits/" + Frag(1, 3, kU4) + ".con";
  Put(&s, con, "__commits/" + a + ".wrt\n__commits/" + b + ".wrt\n__commits/" + c + ".wrt\n");
  Put(&s, "__commits/" + Frag(2, 2, kU1) + ".ign", "__commits/" + b + ".wrt\n");
  // c's .wrt is still there next to the .con: listed once, by the .con.
  Put(&s, "__commits/" + c + ".wrt");
  Put(&s, "__commits/" + d + ".wrt");
  auto l = ListArray(s, DefaultLimits());
  ASSERT_TRUE(l.ok()) << l.error().ToString();
  ASSERT_EQ(FragmentNames(*l), (std::vector<std::string>{a, c, d}));
  EXPECT_EQ(l->fragments[0].commit, CommitKind::kConsolidated);
  EXPECT_EQ(l->fragments[0].commit_file, con);
  EXPECT_EQ(l->fragments[1].commit, CommitKind::kConsolidated);
  EXPECT_EQ(l->fragments[2].commit, CommitKind::kWrt);
  EXPECT_EQ(l->ignored, std::vector<std::string>{"__fragments/" + b});
  EXPECT_EQ(l->uncommitted, std::vector<std::string>{"__fragments/" + b});

  // An ignored entry with its .wrt still present is committed by the .wrt.
  Put(&s, "__commits/" + b + ".wrt");
  auto l2 = ListArray(s, DefaultLimits());
  ASSERT_TRUE(l2.ok());
  ASSERT_EQ(l2->fragments.size(), 4u);
  EXPECT_EQ(l2->fragments[1].commit, CommitKind::kWrt);
  EXPECT_TRUE(l2->uncommitted.empty());
  EXPECT_TRUE(l2->ignored.empty());  // committed after all
}

TEST(ListArray, ConditionsInConsolidatedFile) {
  MemoryStorage s;
  Put(&s, kSchema, "s");
  std::string del = Frag(3, 3, kU1) + ".del", upd = Frag(5, 5, kU2) + ".upd";
  std::string del2 = Frag(4, 4, kU3) + ".del";
  std::string con = "__commits/" + Frag(3, 5, kU4) + ".con";
  Put(&s, con,
      "__commits/" + del + "\n" + Bytes8(3) + "DEL" + "__commits/" + upd + "\n" + Bytes8(2) + "UP" +
          "__commits/" + del2 + "\n" + Bytes8(1) + "Z");
  Put(&s, "__commits/" + del, "standalone duplicate of the .con entry");
  Put(&s, "__commits/" + Frag(1, 1, kU4) + ".del", "own");
  // del2's entry is ignored: TileDB still applies it; flagged.
  Put(&s, "__commits/" + Frag(4, 4, kU4) + ".ign", "__commits/" + del2 + "\n");
  auto l = ListArray(s, DefaultLimits());
  ASSERT_TRUE(l.ok()) << l.error().ToString();
  ASSERT_EQ(l->conditions.size(), 4u);
  EXPECT_EQ(l->conditions[0].path, "__commits/" + Frag(1, 1, kU4) + ".del");
  EXPECT_FALSE(l->conditions[0].in_consolidated_file);
  EXPECT_EQ(l->conditions[1].name.name, Frag(3, 3, kU1));
  EXPECT_EQ(l->conditions[1].path, con);
  EXPECT_TRUE(l->conditions[1].in_consolidated_file);
  EXPECT_EQ(l->conditions[1].contents, (ByteVec{'D', 'E', 'L'}));
  EXPECT_EQ(l->conditions[1].offset, ("__commits/" + del + "\n").size() + 8);
  EXPECT_FALSE(l->conditions[1].ignored);
  EXPECT_EQ(l->conditions[2].name.name, Frag(4, 4, kU3));
  EXPECT_TRUE(l->conditions[2].ignored);
  EXPECT_TRUE(l->conditions[3].is_update);
  EXPECT_EQ(l->conditions[3].contents, (ByteVec{'U', 'P'}));
  EXPECT_TRUE(l->ignored.empty());  // a condition is not a fragment folder
}

TEST(ListArray, LegacyCommits) {
  MemoryStorage s;
  Put(&s, "__array_schema.tdb", "old");
  Put(&s, kSchema, "new");
  std::string ok = Frag(1, 1, kU1, 10), no_ok = Frag(2, 2, kU2, 10), by_con = Frag(3, 3, kU3, 11);
  std::string v4 = "__5_5_" + kU4;        // format 3-4: implicit
  std::string v4_empty = "__6_6_" + kU1;  // format 3-4 without metadata file
  std::string v2 = "__" + kU2 + "_7";     // format 1-2: implicit
  for (const auto& f : {ok, no_ok, by_con, v4, v2}) PutFragmentDir(&s, f);
  Put(&s, v4_empty + "/a.tdb", "x");
  Put(&s, ok + ".ok");
  Put(&s, "__commits/" + Frag(3, 3, kU4) + ".con", by_con + ".ok\n");
  Put(&s, "__lock.tdb");
  Put(&s, "user_notes/readme.txt", "not a fragment");
  Put(&s, "__labels/l/__schema/__1_1_" + kU1, "a dimension label array");
  auto l = ListArray(s, DefaultLimits());
  ASSERT_TRUE(l.ok()) << l.error().ToString();
  ASSERT_EQ(l->schemas.size(), 2u);
  EXPECT_EQ(l->schemas[0].path, "__array_schema.tdb");  // older than any __schema one
  EXPECT_EQ(l->schemas[1].path, kSchema);
  ASSERT_EQ(FragmentNames(*l), (std::vector<std::string>{ok, by_con, v4, v2}));
  EXPECT_EQ(l->fragments[0].commit, CommitKind::kOk);
  EXPECT_EQ(l->fragments[0].dir, ok);
  EXPECT_EQ(l->fragments[1].commit, CommitKind::kConsolidated);
  EXPECT_EQ(l->fragments[2].commit, CommitKind::kImplicit);
  EXPECT_EQ(l->fragments[3].commit, CommitKind::kImplicit);
  EXPECT_EQ(l->uncommitted, (std::vector<std::string>{no_ok, v4_empty}));
  EXPECT_TRUE(l->has_labels_dir);
}

TEST(ListArray, DanglingCommitIsReported) {
  MemoryStorage s;
  Put(&s, kSchema, "s");
  std::string a = Frag(1, 1, kU1);
  Put(&s, "__commits/" + a + ".wrt");
  auto l = ListArray(s, DefaultLimits());
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l->fragments.size(), 1u);
  EXPECT_FALSE(l->fragments[0].dir_exists);
}

TEST(ListArray, VacuumFilesAndFragmentMeta) {
  MemoryStorage s;
  Put(&s, kSchema, "s");
  std::string a = Frag(1, 1, kU1, 10), b = Frag(1, 2, kU2, 10);
  PutFragmentDir(&s, a);
  PutFragmentDir(&s, b);
  Put(&s, a + ".ok");
  Put(&s, b + ".ok");
  // Before format 19: absolute URIs.
  Put(&s, b + ".vac", "file:///data/my arr/" + a + "\n");
  Put(&s, Frag(1, 2, kU3, 10) + ".meta", "m");
  Put(&s, "__fragment_meta/" + Frag(1, 2, kU4) + ".meta", "m");
  Put(&s, "__fragment_meta/readme.txt", "ignored");
  Put(&s, "__meta/__1_1_" + kU1, "m1");
  Put(&s, "__meta/__2_2_" + kU2, "m2");
  Put(&s, "__meta/__1_2_" + kU3, "m3");
  Put(&s, "__meta/__1_2_" + kU3 + ".vac",
      "file:///data/arr/__meta/__1_1_" + kU1 + "\n/__meta/__2_2_" + kU2 + "\n");
  Put(&s, "__meta/__3_3_" + kU4 + ".tmp", "partial write");
  auto l = ListArray(s, DefaultLimits());
  ASSERT_TRUE(l.ok()) << l.error().ToString();
  ASSERT_EQ(l->fragment_vacuums.size(), 1u);
  EXPECT_EQ(l->fragment_vacuums[0].path, b + ".vac");
  EXPECT_EQ(l->fragment_vacuums[0].entries, std::vector<std::string>{a});
  EXPECT_EQ(l->fragment_meta_files,
            (std::vector<std::string>{Frag(1, 2, kU3, 10) + ".meta",
                                      "__fragment_meta/" + Frag(1, 2, kU4) + ".meta"}));
  ASSERT_EQ(l->metadata_files.size(), 3u);
  EXPECT_EQ(l->metadata_files[0].uuid, kU1);
  EXPECT_EQ(l->metadata_files[1].uuid, kU3);  // (1, 2) before (2, 2)
  ASSERT_EQ(l->metadata_vacuums.size(), 1u);
  EXPECT_EQ(l->metadata_vacuums[0].entries,
            (std::vector<std::string>{"__meta/__1_1_" + kU1, "__meta/__2_2_" + kU2}));
}

void ExpectCorrupt(const MemoryStorage& s, const std::string& what) {
  auto l = ListArray(s, DefaultLimits());
  ASSERT_FALSE(l.ok()) << what;
  EXPECT_EQ(l.error().code(), ErrorCode::kCorrupt) << l.error().ToString();
  EXPECT_NE(l.error().message().find(what), std::string::npos) << l.error().message();
}

TEST(ListArray, MalformedNamesOfKnownKinds) {
  auto base = [] {
    MemoryStorage s;
    Put(&s, kSchema, "s");
    return s;
  };
  {
    MemoryStorage s = base();
    Put(&s, "__commits/bad_name.wrt");
    ExpectCorrupt(s, "__commits/bad_name.wrt: not a timestamped name \"bad_name.wrt\"");
  }
  {
    MemoryStorage s = base();
    Put(&s, "__commits/__2_1_" + kU1 + "_22.del");
    ExpectCorrupt(s, "__commits/__2_1_" + kU1 + "_22.del: not a timestamped name");
  }
  {
    MemoryStorage s = base();
    Put(&s, "__commits/x.con", "");
    ExpectCorrupt(s, "__commits/x.con");
  }
  {
    MemoryStorage s = base();
    Put(&s, "__commits/" + Frag(1, 1, kU1) + ".con", "__commits/junk.wrt\n");
    ExpectCorrupt(s, "__commits/" + Frag(1, 1, kU1) + ".con: offset 0: consolidated commits");
  }
  {
    MemoryStorage s = base();
    Put(&s, "__commits/" + Frag(1, 1, kU1) + ".vac", "\n");
    ExpectCorrupt(s, "__commits/" + Frag(1, 1, kU1) + ".vac: offset 0: URI list: empty line");
  }
  {
    MemoryStorage s = base();
    Put(&s, "__schema/not_a_schema", "s");
    ExpectCorrupt(s, "__schema/not_a_schema: not a timestamped name");
  }
  {
    MemoryStorage s = base();
    Put(&s, "__meta/garbage", "m");
    ExpectCorrupt(s, "__meta/garbage");
  }
  {
    MemoryStorage s = base();
    Put(&s, "junk.ok");
    ExpectCorrupt(s, "junk.ok: not a timestamped name");
  }
  {
    MemoryStorage s = base();
    Put(&s, "__fragment_meta/x.meta", "m");
    ExpectCorrupt(s, "__fragment_meta/x.meta");
  }
}

TEST(ListArray, UnknownEntriesAreIgnored) {
  MemoryStorage s;
  Put(&s, kSchema, "s");
  Put(&s, "__schema/__enumerations/__1_1_" + kU1 + "_0", "e");
  Put(&s, "__schema/.hidden", "x");
  Put(&s, "__schema/subdir/file", "x");
  // Not a timestamped name under __fragments: TileDB finds fragments only
  // through commit files, so such a folder is invisible to it; ignored here.
  Put(&s, "__fragments/not_a_fragment/a.tdb", "x");
  Put(&s, "__fragments/stray_file", "x");
  Put(&s, "__commits/notes.txt", "x");
  Put(&s, "__commits/subdir/" + Frag(1, 1, kU1) + ".wrt");
  Put(&s, "__meta/.DS_Store", "x");
  Put(&s, "random.bin", "x");
  auto l = ListArray(s, DefaultLimits());
  ASSERT_TRUE(l.ok()) << l.error().ToString();
  EXPECT_EQ(l->schemas.size(), 1u);
  EXPECT_TRUE(l->has_enumerations_dir);
  EXPECT_TRUE(l->fragments.empty());
  EXPECT_TRUE(l->uncommitted.empty());
  EXPECT_TRUE(l->metadata_files.empty());
}

TEST(ListArray, NotAnArray) {
  MemoryStorage empty;
  auto l = ListArray(empty, DefaultLimits());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code(), ErrorCode::kNotFound);

  MemoryStorage only_fragments;
  PutFragmentDir(&only_fragments, "__fragments/" + Frag(1, 1, kU1));
  EXPECT_EQ(ListArray(only_fragments, DefaultLimits()).error().code(), ErrorCode::kNotFound);
}

TEST(ListArray, Limits) {
  MemoryStorage s;
  Put(&s, kSchema, "s");
  for (uint64_t i = 1; i <= 5; ++i) Put(&s, "__commits/" + Frag(i, i, kU1) + ".wrt");
  Limits few;
  few.max_files = 4;
  auto l = ListArray(s, few);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code(), ErrorCode::kOutOfMemory);
  EXPECT_NE(l.error().message().find("__commits: 5 entries"), std::string::npos);

  Put(&s, "__commits/" + Frag(9, 9, kU2) + ".vac", std::string(100, 'a'));
  Limits small;
  small.max_metadata_bytes = 99;
  auto big = ListArray(s, small);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code(), ErrorCode::kOutOfMemory);
  EXPECT_NE(big.error().message().find(".vac: 100 bytes"), std::string::npos);
}

// A listing only appended to keeps every past view; a consolidation, a
// vacuum or a write at an old timestamp does not.
TEST(OnlyAppendedTest, NewFragmentsAfterTheLatestInstantOnly) {
  auto fragment = [](uint64_t t) {
    FragmentEntry f;
    f.dir = "__fragments/__" + std::to_string(t) + "_" + std::to_string(t) + "_u_22";
    f.name.t1 = f.name.t2 = t;
    return f;
  };
  ArrayListing before;
  before.fragments = {fragment(10), fragment(20)};
  ArrayListing after = before;
  EXPECT_TRUE(OnlyAppended(before, 20, after));
  after.fragments.push_back(fragment(30));
  EXPECT_TRUE(OnlyAppended(before, 20, after));
  ArrayListing old_write = before;
  old_write.fragments.push_back(fragment(15));
  EXPECT_FALSE(OnlyAppended(before, 20, old_write));
  ArrayListing consolidated;
  consolidated.fragments = {fragment(30)};
  EXPECT_FALSE(OnlyAppended(before, 20, consolidated));
  ArrayListing vacuumed = after;
  vacuumed.fragment_vacuums.push_back(VacuumFile{"__commits/x.vac", {}, {}});
  EXPECT_FALSE(OnlyAppended(before, 20, vacuumed));
  ArrayListing ignored = after;
  ignored.ignore_files.push_back("__commits/x.ign");
  EXPECT_FALSE(OnlyAppended(before, 20, ignored));
}

// What S3Storage may keep listed forever: fragments' folders only.
TEST(IsImmutableFolder, FragmentsOnly) {
  for (const char* yes :
       {"__fragments/__1_2_0123456789abcdef0123456789abcdef_22", "__fragments/x/sub",
        "__1_1_0123456789abcdef0123456789abcdef", "__0123456789abcdef0123456789abcdef_1/sub"}) {
    EXPECT_TRUE(IsImmutableFolder(yes)) << yes;
  }
  for (const char* no : {"", "__fragments", "__fragments/", "__schema", "__commits", "__meta",
                         "__fragment_meta", "__schema/__enumerations", "__1_1_short",
                         "__1_1_0123456789ABCDEF0123456789abcdef", "array"}) {
    EXPECT_FALSE(IsImmutableFolder(no)) << no;
  }
}

// What S3Storage may keep in the persistent index: metadata, no tiles.
TEST(IsMetadataFile, AllButFragmentsTiles) {
  for (const char* yes :
       {"__array_schema.tdb", "__schema/__1_1_0123456789abcdef0123456789abcdef",
        "__schema/__enumerations/__0123456789abcdef0123456789abcdef_0", "__commits/__1_1_x_22.wrt",
        "__commits/__1_2_x_22.con", "__meta/__1_1_0123456789abcdef0123456789abcdef",
        "__fragment_meta/__1_2_x_22.meta", "__group/__1_1_x_2",
        "__fragments/__1_2_0123456789abcdef0123456789abcdef_22/__fragment_metadata.tdb",
        "__1_1_0123456789abcdef0123456789abcdef/__fragment_metadata.tdb"}) {
    EXPECT_TRUE(IsMetadataFile(yes)) << yes;
  }
  for (const char* no : {"__fragments/__1_2_0123456789abcdef0123456789abcdef_22/a0.tdb",
                         "__fragments/__1_2_0123456789abcdef0123456789abcdef_22/d0_var.tdb",
                         "__1_1_0123456789abcdef0123456789abcdef/a.tdb"}) {
    EXPECT_FALSE(IsMetadataFile(no)) << no;
  }
}

}  // namespace
}  // namespace tiledbfs::core
