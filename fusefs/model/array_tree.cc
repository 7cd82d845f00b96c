#include "fusefs/model/array_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "core/metadata/metadata.h"
#include "fusefs/model/documents.h"
#include "fusefs/model/instant.h"
#include "fusefs/model/string_file.h"
#include "fusefs/render/column_files.h"
#include "fusefs/render/csv.h"
#include "fusefs/render/npy.h"
#include "fusefs/render/value_text.h"

namespace tiledbfs::fusefs {

using core::Error;
using core::FragmentMetadata;
using Json = nlohmann::ordered_json;

// Where a view is shown: the root, history/<T>/ or fragments/<name>/.
struct ArrayTree::Scope {
  std::shared_ptr<core::Array> array;
  std::shared_ptr<const core::ArrayView> view;
  std::shared_ptr<FragmentMetadata> fragment;  // fragments/<name>/ only
  std::string key;                             // cache key prefix, unique per view
  bool root = false;                           // has history/
  bool immutable = false;
  int64_t mtime_ms = 0;
  std::shared_ptr<const std::vector<core::Enumeration>> enums;  // of the view's schema
};

namespace {

constexpr const char* kAttributes = "attributes";
constexpr const char* kDimensions = "dimensions";

std::string Dump(const Json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

bool IsFragmentScope(const ArrayTree::Scope& s) { return s.fragment != nullptr; }

// The files a full view (root or history) shows at its top.
std::vector<std::string> ViewTopNames(const ArrayTree::Scope& s) {
  if (IsFragmentScope(s)) {
    return {"attributes", "data.csv", "dimensions", "fragment.json", "fragment.txt", "tiles.csv"};
  }
  std::vector<std::string> v = {"attributes",    "data.csv",    "dimensions",
                                "fragments",     "log.txt",     "metadata",
                                "metadata.json", "schema.json", "schema.txt"};
  if (s.root) v.insert(v.begin() + 4, "history");
  return v;
}

bool IsDirName(const std::string& n) {
  return n == "attributes" || n == "dimensions" || n == "fragments" || n == "metadata" ||
         n == "history";
}

}  // namespace

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string EscapeName(const std::string& name) {
  if (name.empty()) return "%00";
  std::string out;
  for (char c : name) {
    if (c == '%')
      out += "%25";
    else if (c == '/')
      out += "%2F";
    else
      out.push_back(c);
  }
  return out;
}

std::string UnescapeName(const std::string& f) {
  if (f == "%00") return "";
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '%' && i + 2 < f.size() + 0 && f.compare(i, 3, "%25") == 0) {
      out.push_back('%');
      i += 2;
    } else if (f[i] == '%' && f.compare(i, 3, "%2F") == 0) {
      out.push_back('/');
      i += 2;
    } else {
      out.push_back(f[i]);
    }
  }
  return out;
}

Result<std::unique_ptr<ArrayTree>> ArrayTree::Open(std::shared_ptr<const core::Storage> storage,
                                                   const TreeOptions& options,
                                                   std::shared_ptr<TreeCaches> caches) {
  static std::atomic<uint64_t> next_id{1};
  std::unique_ptr<ArrayTree> t(new ArrayTree());
  t->id_ = next_id++;
  t->storage_ = std::move(storage);
  t->options_ = options;
  t->caches_ = std::move(caches);
  ASSIGN_OR_RETURN(t->array_, core::Array::Open(t->storage_, options.key));
  t->array_->set_tile_cache(t->caches_->tiles);
  // Check now what every read will need: the footers of the root view.
  uint64_t at = options.timestamp_ms ? static_cast<uint64_t>(*options.timestamp_ms) : UINT64_MAX;
  ASSIGN_OR_RETURN(auto view, t->array_->ViewAt(at));
  (void)view;
  return t;
}

Result<std::shared_ptr<core::Array>> ArrayTree::CurrentArray(bool recheck) {
  std::lock_guard<std::mutex> lock(mu_);
  if (recheck && !options_.timestamp_ms && array_->Changed()) {
    ASSIGN_OR_RETURN(array_, core::Array::Open(storage_, options_.key));
    array_->set_tile_cache(caches_->tiles);
    ++generation_;
  }
  return array_;
}

Result<std::pair<std::shared_ptr<ArrayTree::Scope>, std::vector<std::string>>> ArrayTree::Resolve(
    const std::string& path, bool recheck) {
  std::vector<std::string> parts = SplitPath(path);
  ASSIGN_OR_RETURN(std::shared_ptr<core::Array> array, CurrentArray(recheck));
  auto scope = std::make_shared<Scope>();
  scope->array = array;
  uint64_t t;
  size_t used = 0;
  bool history = !parts.empty() && parts[0] == "history";
  if (history && parts.size() >= 2) {
    std::optional<int64_t> at = ParseInstant(parts[1]);
    if (!at || *at < 0) return Error::NotFound(fmt::format("history/{}: not an instant", parts[1]));
    t = static_cast<uint64_t>(*at);
    scope->immutable = true;
    used = 2;
  } else if (options_.timestamp_ms) {
    t = static_cast<uint64_t>(*options_.timestamp_ms);
    scope->immutable = true;
    scope->root = true;
  } else {
    t = UINT64_MAX;
    scope->root = true;
  }
  ASSIGN_OR_RETURN(scope->view, array->ViewAt(t));
  scope->mtime_ms = static_cast<int64_t>(scope->view->instant());
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    gen = generation_;
  }
  scope->key = fmt::format("a{}/g{}/t{}/", id_, gen, t);
  // fragments/<name>/...: that fragment on its own.
  if (parts.size() >= used + 2 && parts[used] == "fragments") {
    const std::string& name = parts[used + 1];
    std::shared_ptr<FragmentMetadata> frag;
    for (const auto& f : scope->view->fragments()) {
      if (f->name().name == name) frag = f;
    }
    if (!frag) return Error::NotFound(fmt::format("fragments/{}: no such fragment", name));
    core::ViewInputs in;
    in.fragments = {frag};
    in.filter_timestamps = false;
    in.dedup = false;
    in.encrypted = array->encrypted();
    auto fscope = std::make_shared<Scope>(*scope);
    fscope->fragment = frag;
    fscope->view = std::make_shared<const core::ArrayView>(frag->schema_ptr(), std::move(in),
                                                           frag->name().t2, array->tile_cache());
    fscope->mtime_ms = static_cast<int64_t>(frag->name().t2);
    fscope->immutable = true;
    fscope->root = false;
    fscope->key = fmt::format("a{}/g{}/f/{}/", id_, gen, frag->dir());
    scope = fscope;
    used += 2;
  } else if (used == 2) {
    scope->root = false;
  }
  std::vector<std::string> rest(parts.begin() + static_cast<ptrdiff_t>(used), parts.end());
  scope->enums = Enumerations(*array, scope->view->schema());
  return std::make_pair(scope, rest);
}

std::shared_ptr<const std::vector<core::Enumeration>> ArrayTree::Enumerations(
    const core::Array& array, const core::ArraySchema& schema) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = enums_.find(schema.name);
  if (it != enums_.end()) return it->second;
  // A schema whose enumerations cannot be read shows indexes instead of labels.
  auto loaded = core::LoadSchemaEnumerations(*storage_, schema, array.key());
  auto value = std::make_shared<const std::vector<core::Enumeration>>(
      loaded.ok() ? std::move(*loaded) : std::vector<core::Enumeration>{});
  enums_[schema.name] = value;
  return value;
}

Result<std::shared_ptr<const core::Column>> ArrayTree::Column(const Scope& scope,
                                                              const std::string& name) {
  std::string key = scope.key + "col/" + name;
  if (auto c = caches_->columns.Get(key)) return c;
  ASSIGN_OR_RETURN(core::Column c, scope.view->ReadField(name));
  uint64_t bytes = c.data.size() + c.offsets.size() * 8 + c.validity.size();
  auto ptr = std::make_shared<const core::Column>(std::move(c));
  caches_->columns.Put(key, ptr, bytes);
  return std::shared_ptr<const core::Column>(ptr);
}

namespace {

const core::Enumeration* EnumerationFor(const core::ArraySchema& schema,
                                        const std::vector<core::Enumeration>& enums,
                                        const std::string& field) {
  int a = schema.AttributeIndex(field);
  if (a < 0 || !schema.attributes[a].enumeration_name) return nullptr;
  for (const auto& e : enums) {
    if (e.name == *schema.attributes[a].enumeration_name) return &e;
  }
  return nullptr;
}

std::vector<std::string> FieldNames(const core::ArraySchema& s, bool dims) {
  std::vector<std::string> out;
  if (dims) {
    for (const auto& d : s.dimensions) out.push_back(d.name);
  } else {
    for (const auto& a : s.attributes) out.push_back(a.name);
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> ArrayTree::Names(const Scope& scope,
                                                  const std::vector<std::string>& rest) {
  const core::ArraySchema& schema = scope.view->schema();
  if (rest.empty()) return ViewTopNames(scope);
  const std::string& top = rest[0];
  if (rest.size() == 1 && (top == kAttributes || top == kDimensions)) {
    bool dims = top == kDimensions;
    std::vector<std::string> out;
    for (const auto& name : FieldNames(schema, dims)) {
      core::Datatype type;
      uint32_t cvn;
      bool nullable = false;
      if (dims) {
        const auto& d = schema.dimensions[schema.DimensionIndex(name)];
        type = d.type;
        cvn = d.cell_val_num;
      } else {
        const auto& a = schema.attributes[schema.AttributeIndex(name)];
        type = a.type;
        cvn = a.cell_val_num;
        nullable = a.nullable;
      }
      for (ColumnFile f : ColumnFiles(type, cvn, nullable)) {
        out.push_back(EscapeName(name) + std::string(ColumnFileExtension(f)));
      }
    }
    return out;
  }
  if (rest.size() == 1 && top == "fragments" && !IsFragmentScope(scope)) {
    std::vector<std::string> out;
    for (const auto& f : scope.view->fragments()) out.push_back(f->name().name);
    return out;
  }
  if (rest.size() == 1 && top == "metadata" && !IsFragmentScope(scope)) {
    ASSIGN_OR_RETURN(auto md, core::LoadMetadata(scope.array->storage(), "__meta",
                                                 scope.view->timestamp(), scope.array->key()));
    std::vector<std::string> out;
    for (const auto& [k, v] : md) out.push_back(EscapeName(k));
    return out;
  }
  if (rest.size() == 1 && top == "history" && scope.root) {
    ASSIGN_OR_RETURN(std::vector<uint64_t> instants, scope.array->Instants());
    std::vector<std::string> out;
    for (uint64_t t : instants) out.push_back(FormatIso(static_cast<int64_t>(t)));
    return out;
  }
  return Error::NotFound(fmt::format("{}: no such directory", fmt::join(rest, "/")));
}

Result<NodeAttr> ArrayTree::Attr(const Scope& scope, const std::vector<std::string>& rest) {
  NodeAttr a;
  a.mtime_ms = scope.mtime_ms;
  a.immutable = scope.immutable;
  bool dir = rest.empty() ||
             (rest.size() == 1 && IsDirName(rest[0]) &&
              (!IsFragmentScope(scope) || rest[0] == kAttributes || rest[0] == kDimensions) &&
              (rest[0] != "history" || scope.root));
  if (dir) {
    a.type = NodeType::kDirectory;
    if (!rest.empty()) {
      // Existence check through the listing's parent.
      ASSIGN_OR_RETURN(auto top, Names(scope, {}));
      if (std::find(top.begin(), top.end(), rest[0]) == top.end()) {
        return Error::NotFound(fmt::format("{}: no such directory", rest[0]));
      }
    }
    return a;
  }
  a.type = NodeType::kFile;
  ASSIGN_OR_RETURN(std::unique_ptr<OpenFile> field, FieldFile(scope, rest));
  if (field) {
    a.size = field->size();
    return a;
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const std::string> content, Render(scope, rest));
  a.size = content->size();
  return a;
}

namespace {

// attributes/<a>.bin|.npy of a fixed-size field: an optional header, then
// the field's cells, each read through ArrayView::ReadFieldRange.
class FieldRangeFile final : public OpenFile {
 public:
  FieldRangeFile(std::shared_ptr<const core::ArrayView> view, std::string field, std::string header,
                 uint64_t cells, uint64_t cell_size)
      : view_(std::move(view)),
        field_(std::move(field)),
        header_(std::move(header)),
        cells_(cells),
        cell_size_(cell_size) {}

  uint64_t size() const override { return header_.size() + cells_ * cell_size_; }

  Result<size_t> Read(uint64_t offset, std::span<uint8_t> out) override {
    uint64_t end = std::min<uint64_t>(size(), offset + out.size());
    if (offset >= end) return size_t{0};
    size_t done = 0;
    if (offset < header_.size()) {
      size_t n = std::min<uint64_t>(header_.size() - offset, end - offset);
      std::memcpy(out.data(), header_.data() + offset, n);
      done += n;
      offset += n;
    }
    if (offset < end) {
      uint64_t data_from = offset - header_.size(), data_to = end - header_.size();
      uint64_t first = data_from / cell_size_;
      uint64_t last = (data_to + cell_size_ - 1) / cell_size_;
      ASSIGN_OR_RETURN(core::Column c, view_->ReadFieldRange(field_, first, last - first));
      uint64_t skip = data_from - first * cell_size_;
      uint64_t n = data_to - data_from;
      if (skip + n > c.data.size()) {
        return Error::Corrupt(
            fmt::format("{}: {} bytes decoded for {} wanted", field_, c.data.size(), skip + n));
      }
      std::memcpy(out.data() + done, c.data.data() + skip, n);
      done += n;
    }
    return done;
  }

 private:
  std::shared_ptr<const core::ArrayView> view_;
  std::string field_;
  std::string header_;
  uint64_t cells_;
  uint64_t cell_size_;
};

}  // namespace

Result<std::unique_ptr<OpenFile>> ArrayTree::FieldFile(const Scope& scope,
                                                       const std::vector<std::string>& rest) {
  if (rest.size() != 2 || (rest[0] != kAttributes && rest[0] != kDimensions)) {
    return std::unique_ptr<OpenFile>();
  }
  std::string_view stem;
  std::optional<ColumnFile> kind = ColumnFileFromName(rest[1], &stem);
  if (!kind || (*kind != ColumnFile::kBin && *kind != ColumnFile::kNpy)) {
    return std::unique_ptr<OpenFile>();
  }
  const core::ArraySchema& schema = scope.view->schema();
  std::string name = UnescapeName(std::string(stem));
  core::Datatype type;
  uint32_t cvn;
  if (rest[0] == kDimensions) {
    int d = schema.DimensionIndex(name);
    if (d < 0) return std::unique_ptr<OpenFile>();
    type = schema.dimensions[d].type;
    cvn = schema.dimensions[d].cell_val_num;
  } else {
    int a = schema.AttributeIndex(name);
    if (a < 0) return std::unique_ptr<OpenFile>();
    type = schema.attributes[a].type;
    cvn = schema.attributes[a].cell_val_num;
  }
  if (cvn == core::kVarNum || cvn == 0) return std::unique_ptr<OpenFile>();
  uint64_t cell_size = core::DatatypeSize(type) * cvn;
  ASSIGN_OR_RETURN(uint64_t cells, scope.view->CellCount());
  std::string header;
  if (*kind == ColumnFile::kNpy) {
    ASSIGN_OR_RETURN(std::vector<uint64_t> shape, scope.view->Shape());
    ASSIGN_OR_RETURN(NpyFile npy, MakeNpyFile(type, cvn, shape));
    header = std::move(npy.header);
  }
  return std::unique_ptr<OpenFile>(
      new FieldRangeFile(scope.view, name, std::move(header), cells, cell_size));
}

Result<std::shared_ptr<const std::string>> ArrayTree::Render(const Scope& scope,
                                                             const std::vector<std::string>& rest) {
  std::string path = fmt::format("{}", fmt::join(rest, "/"));
  std::string key = scope.key + "file/" + path;
  if (auto c = caches_->files.Get(key)) return c;
  const core::ArraySchema& schema = scope.view->schema();
  const core::ArrayView& view = *scope.view;
  std::string out;
  auto not_found = [&]() { return Error::NotFound(fmt::format("{}: no such file", path)); };

  if (rest.size() == 2 && (rest[0] == kAttributes || rest[0] == kDimensions)) {
    std::string stem_view;
    std::string_view stem;
    std::optional<ColumnFile> kind = ColumnFileFromName(rest[1], &stem);
    if (!kind) return not_found();
    std::string name = UnescapeName(std::string(stem));
    bool dims = rest[0] == kDimensions;
    if ((dims ? schema.DimensionIndex(name) : schema.AttributeIndex(name)) < 0) return not_found();
    ASSIGN_OR_RETURN(std::shared_ptr<const core::Column> col, Column(scope, name));
    auto files = ColumnFiles(*col);
    if (std::find(files.begin(), files.end(), *kind) == files.end()) return not_found();
    switch (*kind) {
      case ColumnFile::kBin:
        out.assign(col->data.begin(), col->data.end());
        break;
      case ColumnFile::kOffsets:
        out.resize(col->offsets.size() * 8);
        if (!col->offsets.empty()) std::memcpy(out.data(), col->offsets.data(), out.size());
        break;
      case ColumnFile::kValidity:
        out.assign(col->validity.begin(), col->validity.end());
        break;
      case ColumnFile::kNpy: {
        ASSIGN_OR_RETURN(std::vector<uint64_t> shape, view.Shape());
        ASSIGN_OR_RETURN(NpyFile npy, MakeNpyFile(col->type, col->cell_val_num, shape));
        out = npy.header;
        out.append(col->data.begin(), col->data.end());
        break;
      }
      case ColumnFile::kTxt: {
        const core::Enumeration* e = dims ? nullptr : EnumerationFor(schema, *scope.enums, name);
        ASSIGN_OR_RETURN(CsvTable table, CsvTable::Make({CsvColumn{col.get(), e}}, false));
        table.AppendRows(out, 0, table.row_count());
        break;
      }
    }
  } else if (rest.size() == 1 && rest[0] == "data.csv") {
    std::vector<std::shared_ptr<const core::Column>> cols;
    std::vector<CsvColumn> cc;
    for (const auto& d : schema.dimensions) {
      ASSIGN_OR_RETURN(auto c, Column(scope, d.name));
      cols.push_back(c);
    }
    for (const auto& a : schema.attributes) {
      ASSIGN_OR_RETURN(auto c, Column(scope, a.name));
      cols.push_back(c);
    }
    for (const auto& c : cols)
      cc.push_back({c.get(), EnumerationFor(schema, *scope.enums, c->name)});
    ASSIGN_OR_RETURN(CsvTable table, CsvTable::Make(std::move(cc), true));
    table.AppendHeader(out);
    table.AppendRows(out, 0, table.row_count());
  } else if (rest.size() == 1 && rest[0] == "schema.json" && !IsFragmentScope(scope)) {
    out = core::SchemaToJson(schema, scope.enums.get());
  } else if (rest.size() == 1 && rest[0] == "schema.txt" && !IsFragmentScope(scope)) {
    out = core::SchemaToText(schema, scope.enums.get());
  } else if (!IsFragmentScope(scope) && (rest.size() == 2 && rest[0] == "metadata")) {
    ASSIGN_OR_RETURN(auto md, core::LoadMetadata(scope.array->storage(), "__meta", view.timestamp(),
                                                 scope.array->key()));
    auto it = md.find(UnescapeName(rest[1]));
    if (it == md.end()) return not_found();
    out = MetadataValueText(it->second);
  } else if (!IsFragmentScope(scope) && rest.size() == 1 && rest[0] == "metadata.json") {
    ASSIGN_OR_RETURN(auto md, core::LoadMetadata(scope.array->storage(), "__meta", view.timestamp(),
                                                 scope.array->key()));
    out = Dump(MetadataJson(md));
  } else if (!IsFragmentScope(scope) && rest.size() == 1 && rest[0] == "log.txt") {
    ASSIGN_OR_RETURN(out, RenderLog(*scope.array, view.timestamp()));
  } else if (IsFragmentScope(scope) && rest.size() == 1 &&
             (rest[0] == "fragment.json" || rest[0] == "fragment.txt")) {
    ASSIGN_OR_RETURN(Json j, FragmentJson(*scope.array, *scope.fragment));
    out = rest[0] == "fragment.json" ? Dump(j) : FragmentText(j);
  } else if (IsFragmentScope(scope) && rest.size() == 1 && rest[0] == "tiles.csv") {
    ASSIGN_OR_RETURN(out, RenderTilesCsv(*scope.fragment));
  } else {
    return not_found();
  }
  auto ptr = std::make_shared<const std::string>(std::move(out));
  caches_->files.Put(key, ptr, ptr->size());
  return std::shared_ptr<const std::string>(ptr);
}

Result<NodeAttr> ArrayTree::GetAttr(const std::string& path) {
  std::vector<std::string> parts = SplitPath(path);
  if (parts.size() == 1 && parts[0] == "history") {
    ASSIGN_OR_RETURN(auto array, CurrentArray(false));
    NodeAttr a;
    a.type = NodeType::kDirectory;
    ASSIGN_OR_RETURN(uint64_t latest, array->LatestInstant());
    a.mtime_ms = static_cast<int64_t>(latest);
    return a;
  }
  ASSIGN_OR_RETURN(auto resolved, Resolve(path, false));
  return Attr(*resolved.first, resolved.second);
}

Result<std::vector<DirEntryAttr>> ArrayTree::List(const std::string& path) {
  std::vector<std::string> parts = SplitPath(path);
  std::shared_ptr<Scope> scope;
  std::vector<std::string> rest;
  if (parts.size() == 1 && parts[0] == "history") {
    ASSIGN_OR_RETURN(auto resolved, Resolve("", true));
    scope = resolved.first;
    rest = {"history"};
  } else {
    ASSIGN_OR_RETURN(auto resolved, Resolve(path, true));
    scope = resolved.first;
    rest = resolved.second;
  }
  ASSIGN_OR_RETURN(NodeAttr self, Attr(*scope, rest));
  if (self.type != NodeType::kDirectory) {
    return Error::InvalidArgument(fmt::format("{}: not a directory", path));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, Names(*scope, rest));
  std::vector<DirEntryAttr> out;
  for (const auto& n : names) {
    std::string child = path.empty() ? n : path + "/" + n;
    ASSIGN_OR_RETURN(NodeAttr a, GetAttr(child));
    out.push_back({n, a});
  }
  return out;
}

Result<std::unique_ptr<OpenFile>> ArrayTree::Open(const std::string& path) {
  ASSIGN_OR_RETURN(auto resolved, Resolve(path, true));
  ASSIGN_OR_RETURN(NodeAttr a, Attr(*resolved.first, resolved.second));
  if (a.type != NodeType::kFile)
    return Error::InvalidArgument(fmt::format("{}: is a directory", path));
  ASSIGN_OR_RETURN(std::unique_ptr<OpenFile> field, FieldFile(*resolved.first, resolved.second));
  if (field) return field;
  ASSIGN_OR_RETURN(auto content, Render(*resolved.first, resolved.second));
  return std::unique_ptr<OpenFile>(new StringFile(content));
}

}  // namespace tiledbfs::fusefs
