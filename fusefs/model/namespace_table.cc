#include "fusefs/model/namespace_table.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/metadata/group.h"
#include "core/metadata/metadata.h"
#include "core/util/text.h"
#include "fusefs/model/documents.h"

namespace tiledbfs::fusefs {

namespace {

using Json = nlohmann::ordered_json;

std::string Dump(const Json& j) { return core::DumpJsonText(j, 2) + "\n"; }

Result<std::string> SchemaJsonFile(const Scope& s) {
  return core::SchemaToJson(s.view->schema(), s.enums.get());
}
Result<std::string> SchemaTextFile(const Scope& s) {
  return core::SchemaToText(s.view->schema(), s.enums.get());
}
Result<std::string> MetadataJsonFile(const Scope& s) {
  ASSIGN_OR_RETURN(auto md, ViewMetadata(s));
  return Dump(MetadataJson(md));
}
// Members as the group lists them, then its metadata.
Result<std::string> GroupJsonFile(const Scope& s) {
  const GroupFolder& g = *s.group;
  ASSIGN_OR_RETURN(auto members, core::LoadGroupMembers(*g.storage, g.timestamp, g.key, g.limits));
  ASSIGN_OR_RETURN(auto md, ViewMetadata(s));
  Json j;
  j["members"] = Json::array();
  for (const auto& m : members) {
    j["members"].push_back({{"name", m.name},
                            {"type", m.type == core::GroupMember::kGroup ? "group" : "array"},
                            {"uri", m.uri},
                            {"relative", m.relative}});
  }
  j["metadata"] = MetadataJson(md);
  return Dump(j);
}
Result<std::string> LogFile(const Scope& s) { return RenderLog(*s.array, s.view->timestamp()); }
Result<std::string> FragmentJsonFile(const Scope& s) {
  ASSIGN_OR_RETURN(Json j, FragmentJson(*s.array, *s.fragment));
  return Dump(j);
}
Result<std::string> FragmentTextFile(const Scope& s) {
  ASSIGN_OR_RETURN(Json j, FragmentJson(*s.array, *s.fragment));
  return FragmentText(j);
}
Result<std::string> TilesCsvFile(const Scope& s) { return RenderTilesCsv(*s.fragment); }

constexpr NamespaceEntry Document(std::string_view name, uint8_t views, DocumentRenderer render) {
  NamespaceEntry e;
  e.name = name;
  e.views = views;
  e.render = render;
  return e;
}
constexpr NamespaceEntry Cells(std::string_view name, CellKind cells) {
  NamespaceEntry e;
  e.name = name;
  e.views = kCellViews;
  e.file = FileKind::kCells;
  e.cells = cells;
  return e;
}
constexpr NamespaceEntry DiffFile(std::string_view name, FileKind file,
                                  core::DiffKind diff = core::DiffKind::kAdded) {
  NamespaceEntry e;
  e.name = name;
  e.views = kDiffView;
  e.file = file;
  e.diff = diff;
  return e;
}
constexpr NamespaceEntry Dir(std::string_view name, uint8_t views, DirKind dir,
                             std::string_view child) {
  NamespaceEntry e;
  e.name = name;
  e.views = views;
  e.type = NodeType::kDirectory;
  e.dir = dir;
  e.child = child;
  return e;
}

// Each row: a name, the views that show it, and what serves it (a
// renderer, a cell file, or a folder's kind and its entries' pattern).
// In listing order; slice/ before schema.txt, as listings always showed it.
constexpr NamespaceEntry kNamespace[] = {
    Dir("attributes", kCellViews, DirKind::kAttributes, "<a>"),
    Cells("data.csv", CellKind::kDataCsv),
    Cells("data.parquet", CellKind::kParquet),
    Dir("dimensions", kCellViews, DirKind::kDimensions, "<d>"),
    Dir("diff", kRootView, DirKind::kDiffs, "<T1>..<T2>/"),
    Document("fragment.json", kFragmentView, FragmentJsonFile),
    Document("fragment.txt", kFragmentView, FragmentTextFile),
    Dir("fragments", kArrayViews, DirKind::kFragments, "<name>/"),
    Document("group.json", kGroupView, GroupJsonFile),
    Dir("history", kRootView, DirKind::kHistory, "<ISO>/"),
    Document("log.txt", kArrayViews, LogFile),
    Dir("metadata", kArrayViews | kGroupView, DirKind::kMetadata, "<key>"),
    Document("metadata.json", kArrayViews | kGroupView, MetadataJsonFile),
    Document("schema.json", kArrayViews, SchemaJsonFile),
    Dir("slice", kRootView | kHistoryView, DirKind::kSlices, "<ranges>/"),
    Document("schema.txt", kArrayViews, SchemaTextFile),
    Document("tiles.csv", kFragmentView, TilesCsvFile),
    // A diff's files (diff.h).
    DiffFile("added.csv", FileKind::kDiffCsv, core::DiffKind::kAdded),
    DiffFile("changed.csv", FileKind::kDiffCsv, core::DiffKind::kChanged),
    DiffFile("removed.csv", FileKind::kDiffCsv, core::DiffKind::kRemoved),
    DiffFile("summary.json", FileKind::kDiffSummary),
};

}  // namespace

std::span<const NamespaceEntry> NamespaceEntries() { return kNamespace; }

const NamespaceEntry* FindEntry(ViewKind kind, std::string_view name) {
  for (const NamespaceEntry& e : kNamespace) {
    if ((e.views & kind) != 0 && e.name == name) return &e;
  }
  return nullptr;
}

Result<std::map<std::string, core::MetadataValue>> ViewMetadata(const Scope& s) {
  if (s.group != nullptr) {
    return core::LoadMetadata(*s.group->storage, "__meta", s.group->timestamp, s.group->key,
                              s.group->limits);
  }
  return core::LoadMetadata(s.array->storage(), "__meta", s.view->timestamp(), s.array->key(),
                            s.array->limits());
}

Result<std::string> RenderMetadataValue(const Scope& scope, const std::string& key) {
  ASSIGN_OR_RETURN(auto md, ViewMetadata(scope));
  auto it = md.find(key);
  if (it == md.end()) return core::Error::NotFound(fmt::format("metadata/{}: no such key", key));
  return MetadataValueText(it->second);
}

}  // namespace tiledbfs::fusefs
