#include "fusefs/model/namespace_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "fusefs/render/column_files.h"

// The table against docs/namespace.md: the entries its listings show for an
// array, a fragment, a diff and a group, the patterns below each folder, the
// files of a field, and what history/ and slice/ views leave out.
namespace tiledbfs::fusefs::namespace_table_test {
namespace {

std::vector<std::string> Listed(ViewKind kind) {
  std::vector<std::string> out;
  for (const NamespaceEntry& e : NamespaceEntries()) {
    if ((e.views & kind) != 0) out.emplace_back(e.name);
  }
  return out;
}

std::set<std::string> AsSet(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

// One line of a listing in the doc: its indent, the path (up to two
// spaces) and the words after it, continuation lines joined.
struct DocLine {
  size_t indent = 0;
  std::string path;
  std::string says;
};

// The ``` block that follows `heading` in docs/namespace.md.
std::vector<DocLine> DocListing(const std::string& heading) {
  std::ifstream in(TILEDBFS_TEST_DATA "/../../docs/namespace.md");
  EXPECT_TRUE(in.good()) << "docs/namespace.md";
  std::string line;
  while (std::getline(in, line) && line != heading) {
  }
  while (std::getline(in, line) && line.rfind("```", 0) != 0) {
  }
  std::vector<DocLine> out;
  while (std::getline(in, line) && line.rfind("```", 0) != 0) {
    const size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos) continue;
    const size_t gap = line.find("  ", indent);
    std::string path = line.substr(indent, gap == std::string::npos ? gap : gap - indent);
    std::string says = gap == std::string::npos ? "" : line.substr(gap);
    if (indent > 6 && !out.empty()) {
      out.back().says += " " + line.substr(indent);  // the line above goes on
      continue;
    }
    out.push_back({indent, std::move(path), std::move(says)});
  }
  EXPECT_FALSE(out.empty()) << "no listing after " << heading;
  return out;
}

std::string Top(const std::string& path) { return path.substr(0, path.find('/')); }

TEST(NamespaceTableTest, ListingsKeepTheirOrder) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Listed(kRootView), (V{"attributes", "data.csv", "data.parquet", "dimensions", "diff",
                                  "fragments", "history", "log.txt", "metadata", "metadata.json",
                                  "schema.json", "slice", "schema.txt"}));
  EXPECT_EQ(Listed(kHistoryView),
            (V{"attributes", "data.csv", "data.parquet", "dimensions", "fragments", "log.txt",
               "metadata", "metadata.json", "schema.json", "slice", "schema.txt"}));
  EXPECT_EQ(Listed(kSliceView),
            (V{"attributes", "data.csv", "data.parquet", "dimensions", "fragments", "log.txt",
               "metadata", "metadata.json", "schema.json", "schema.txt"}));
  EXPECT_EQ(Listed(kFragmentView), (V{"attributes", "data.csv", "data.parquet", "dimensions",
                                      "fragment.json", "fragment.txt", "tiles.csv"}));
  EXPECT_EQ(Listed(kDiffView), (V{"added.csv", "changed.csv", "removed.csv", "summary.json"}));
  EXPECT_EQ(Listed(kGroupView), (V{"group.json", "metadata", "metadata.json"}));
  EXPECT_EQ(FindEntry(kGroupView, "schema.json"), nullptr);
  EXPECT_EQ(FindEntry(kHistoryView, "history"), nullptr);
  ASSERT_NE(FindEntry(kFragmentView, "tiles.csv"), nullptr);
  EXPECT_EQ(FindEntry(kFragmentView, "tiles.csv")->file, FileKind::kDocument);
}

TEST(NamespaceTableTest, DocListsWhatTheTableShows) {
  std::set<std::string> root, fragment;
  std::map<std::string, std::string> says;  // by top-level name
  std::set<std::string> paths;
  for (const DocLine& l : DocListing("## An array")) {
    if (l.indent == 2) {
      root.insert(Top(l.path));
      says[Top(l.path)] += l.says;
      paths.insert(l.path);
    } else if (l.indent == 6) {  // below fragments/<name>/
      std::istringstream names(l.path);
      for (std::string n; std::getline(names, n, ',');) {
        n.erase(0, n.find_first_not_of(' '));
        fragment.insert(Top(n));
      }
    }
  }
  EXPECT_EQ(root, AsSet(Listed(kRootView)));
  EXPECT_EQ(fragment, AsSet(Listed(kFragmentView)));

  // A folder's entries as the doc writes them.
  for (const NamespaceEntry& e : NamespaceEntries()) {
    if (e.type != NodeType::kDirectory || (e.views & kRootView) == 0) continue;
    const std::string prefix = std::string(e.name) + "/" + std::string(e.child);
    bool found = false;
    for (const std::string& p : paths) found = found || p.rfind(prefix, 0) == 0;
    EXPECT_TRUE(found) << prefix << " not in docs/namespace.md";
  }

  // "same layout, no history/, slice/ or diff/": what such views leave out.
  for (auto [name, kind] : {std::pair{"history", kHistoryView}, std::pair{"slice", kSliceView}}) {
    const std::string& text = says[name];
    const size_t no = text.find("no ");
    ASSERT_NE(no, std::string::npos) << name << ": " << text;
    const std::string left_out = text.substr(no, text.find(')', no) - no);
    const std::set<std::string> shown = AsSet(Listed(kind));
    for (const std::string& n : Listed(kRootView)) {
      const bool said = left_out.find(n + "/") != std::string::npos;
      if (said) {
        EXPECT_EQ(shown.count(n), 0u) << name << " view shows " << n;
      }
    }
    for (const std::string& n : shown) EXPECT_TRUE(root.count(n)) << name << ": " << n;
  }
}

TEST(NamespaceTableTest, DocListsEachFileOfAField) {
  std::set<std::string> doc, ours;
  std::map<std::string, std::string> says;
  for (const DocLine& l : DocListing("## An array")) {
    if (l.indent != 2 || Top(l.path) != "attributes") continue;
    const std::string ext = l.path.substr(l.path.find('.'));
    doc.insert(ext);
    says[ext] = l.says;
  }
  for (ColumnFile f : {ColumnFile::kBin, ColumnFile::kOffsets, ColumnFile::kValidity,
                       ColumnFile::kNpy, ColumnFile::kTxt}) {
    ours.emplace(ColumnFileExtension(f));
  }
  EXPECT_EQ(doc, ours);
  // Which fields have it, as the doc says.
  auto has = [](core::Datatype t, uint32_t cvn, bool nullable, std::string_view ext) {
    for (ColumnFile f : ColumnFiles(t, cvn, nullable)) {
      if (ColumnFileExtension(f) == ext) return true;
    }
    return false;
  };
  using core::Datatype;
  for (const auto& [ext, text] : says) {
    const bool var_only = text.find("var-sized only") != std::string::npos;
    const bool nullable_only = text.find("nullable only") != std::string::npos;
    const bool fixed_only = text.find("fixed-size types only") != std::string::npos;
    EXPECT_EQ(has(Datatype::kInt32, 1, false, ext), !var_only && !nullable_only) << ext;
    EXPECT_EQ(has(Datatype::kStringUtf8, core::kVarNum, true, ext), !fixed_only) << ext;
  }
}

TEST(NamespaceTableTest, DocListsTheFilesOfADiff) {
  std::set<std::string> doc;
  for (const DocLine& l : DocListing("### Diffs")) {
    if (l.indent == 2) doc.insert(l.path);
  }
  EXPECT_EQ(doc, AsSet(Listed(kDiffView)));
}

TEST(NamespaceTableTest, DocListsTheEntriesOfAGroup) {
  std::set<std::string> doc, paths;
  for (const DocLine& l : DocListing("## A group")) {
    if (l.indent != 2) continue;
    std::istringstream names(l.path);
    for (std::string n; std::getline(names, n, ',');) {
      n.erase(0, n.find_first_not_of(' '));
      paths.insert(n);
      // A group's members are its folders besides the table's rows.
      if (n != "<member>/") doc.insert(Top(n));
    }
  }
  EXPECT_EQ(doc, AsSet(Listed(kGroupView)));
  for (const NamespaceEntry& e : NamespaceEntries()) {
    if (e.type != NodeType::kDirectory || (e.views & kGroupView) == 0) continue;
    const std::string path = std::string(e.name) + "/" + std::string(e.child);
    EXPECT_TRUE(paths.count(path)) << path << " not in docs/namespace.md";
  }
}

}  // namespace
}  // namespace tiledbfs::fusefs::namespace_table_test
