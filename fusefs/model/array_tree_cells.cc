// ArrayTree's files streamed from a view's cells (array_tree.h CellFile):
// which field file a name is, sizes, layouts (also from the persistent
// index) and data.parquet's plan.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/util/text.h"
#include "fusefs/model/array_tree.h"
#include "fusefs/model/instant.h"
#include "fusefs/model/names.h"
#include "fusefs/render/column_files.h"
#include "fusefs/render/csv.h"
#include "fusefs/render/npy.h"
#include "fusefs/render/value_text.h"

namespace tiledbfs::fusefs {

using core::Error;
using Json = nlohmann::ordered_json;

Result<ArrayTree::CellFile> ArrayTree::FieldFile(const Scope& scope, bool dimension,
                                                 const std::string& name) {
  using Kind = CellFile::Kind;
  auto not_found = [&]() {
    return Error::NotFound(
        fmt::format("{}/{}: no such file", dimension ? "dimensions" : "attributes", name));
  };
  std::string_view stem;
  std::optional<ColumnFile> kind = ColumnFileFromName(name, &stem);
  if (!kind) return not_found();
  const core::ArraySchema& schema = scope.view->schema();
  CellFile f;
  f.dimension = dimension;
  f.field = UnescapeName(std::string(stem));
  bool nullable = false;
  if (dimension) {
    int d = schema.DimensionIndex(f.field);
    if (d < 0) return not_found();
    f.type = schema.dimensions[d].type;
    f.cell_val_num = schema.dimensions[d].cell_val_num;
  } else {
    int a = schema.AttributeIndex(f.field);
    if (a < 0) return not_found();
    f.type = schema.attributes[a].type;
    f.cell_val_num = schema.attributes[a].cell_val_num;
    nullable = schema.attributes[a].nullable;
  }
  auto files = ColumnFiles(f.type, f.cell_val_num, nullable);
  if (std::find(files.begin(), files.end(), *kind) == files.end()) return not_found();
  // By ColumnFile's order; a var-sized field's .bin is its data stream.
  static constexpr Kind kKinds[] = {Kind::kFixed, Kind::kVarOffsets, Kind::kValidity, Kind::kNpy,
                                    Kind::kTxt};
  const bool var = f.cell_val_num == core::kVarNum;
  f.kind = *kind == ColumnFile::kBin && var ? Kind::kVarData : kKinds[static_cast<size_t>(*kind)];
  return f;
}

std::string ArrayTree::CellFile::LayoutKey() const {
  return kind == Kind::kDataCsv   ? std::string("layout/data.csv")
         : kind == Kind::kParquet ? std::string("layout/data.parquet")
                                  : fmt::format("layout/{}/{}/{}", dimension ? 'd' : 'a',
                                                static_cast<int>(kind), EscapeName(field));
}

namespace {

Result<std::string> NpyHeader(const core::ArrayView& view, core::Datatype type, uint32_t cvn) {
  ASSIGN_OR_RETURN(std::vector<uint64_t> shape, view.Shape());
  ASSIGN_OR_RETURN(NpyFile npy, MakeNpyFile(type, cvn, shape));
  return std::move(npy.header);
}

// data.csv's columns: the dimensions, then the attributes.
std::vector<std::string> CsvFields(const core::ArraySchema& schema) {
  std::vector<std::string> fields;
  for (const auto& d : schema.dimensions) fields.push_back(d.name);
  for (const auto& a : schema.attributes) fields.push_back(a.name);
  return fields;
}

std::shared_ptr<const CellRenderer> RendererFor(const ArrayTree::Scope& scope,
                                                const std::string& field, bool csv, bool var_data) {
  if (csv) return MakeCsvRenderer(scope.view, CsvFields(scope.view->schema()), scope.enums);
  if (var_data) return MakeVarDataRenderer(scope.view, field);
  return MakeCsvRenderer(scope.view, {field}, scope.enums);
}

}  // namespace

std::shared_ptr<const StreamLayout> ArrayTree::PutLayouts(const Scope& scope, ViewLayouts all,
                                                          PendingLayout* pending,
                                                          const std::string& key) {
  using Kind = CellFile::Kind;
  std::shared_ptr<const StreamLayout> wanted;
  auto put = [&](const CellFile& file, StreamLayout layout) {
    auto ptr = std::make_shared<const StreamLayout>(std::move(layout));
    const std::string k = scope.key + file.LayoutKey();
    caches_->layouts.Put(k, ptr, ptr->footprint());
    if (pending != nullptr) pending->layouts[k] = ptr;
    if (k == key) wanted = ptr;
  };
  const core::ArraySchema& schema = scope.view->schema();
  auto put_field = [&](Kind kind, const std::string& field, StreamLayout layout) {
    CellFile file;
    file.kind = kind;
    file.dimension = schema.DimensionIndex(field) >= 0;
    file.field = field;
    put(file, std::move(layout));
  };
  for (auto& [field, layout] : all.txt) put_field(Kind::kTxt, field, std::move(layout));
  for (auto& [field, layout] : all.var_data) put_field(Kind::kVarData, field, std::move(layout));
  put(CellFile{}, std::move(all.csv));
  auto counts = std::make_shared<const ParquetCountsMap>(std::move(all.parquet));
  uint64_t bytes = sizeof(*counts);
  for (const auto& [field, c] : *counts) {
    bytes += field.size() + (c.valid.size() + c.bytes.size() + c.empty.size()) * 8;
  }
  caches_->parquet_counts.Put(scope.key + "layout/counts", counts, bytes);
  if (pending != nullptr) pending->counts = counts;
  return wanted;
}

Result<std::shared_ptr<const StreamLayout>> ArrayTree::Layout(
    const Scope& scope, const CellFile& f, std::shared_ptr<const ParquetCountsMap>* counts) {
  using Kind = CellFile::Kind;
  std::string key = scope.key + f.LayoutKey();
  // The layout (and the counts asked for) as cached.
  auto cached = [&]() -> std::shared_ptr<const StreamLayout> {
    std::shared_ptr<const StreamLayout> hit = caches_->layouts.Get(key);
    if (hit && counts != nullptr) {
      *counts = caches_->parquet_counts.Get(scope.key + "layout/counts");
      if (!*counts) return nullptr;
    }
    return hit;
  };
  if (auto hit = cached()) return hit;
  if (f.kind != Kind::kVarData && f.kind != Kind::kTxt && f.kind != Kind::kDataCsv) {
    return Error::InvalidArgument(fmt::format("{}: no layout pass for this file", key));
  }
  // One pass per view at a time: callers that ask for a layout of a view
  // being laid out wait for it (a stat and an open racing, two readers,
  // data.csv and a .txt).
  const std::string pass_key = scope.key + "layout/text";
  std::shared_ptr<PendingLayout> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = pending_layouts_[pass_key];
    if (!slot) slot = std::make_shared<PendingLayout>();
    pending = slot;
  }
  std::lock_guard<std::mutex> pass_lock(pending->mu);
  auto passed = [&]() -> std::shared_ptr<const StreamLayout> {
    auto it = pending->layouts.find(key);
    if (it == pending->layouts.end() || (counts != nullptr && !pending->counts)) return nullptr;
    if (counts != nullptr) *counts = pending->counts;
    return it->second;
  };
  if (auto done = passed()) return done;
  auto computed = [&]() -> Result<std::shared_ptr<const StreamLayout>> {
    if (auto hit = cached()) return hit;
    FromIndex(scope, pending.get(), key);
    if (auto indexed = passed()) return indexed;
    ASSIGN_OR_RETURN(uint64_t cells, scope.view->CellCount());
    uint64_t piece = options_.piece_cells != 0 ? options_.piece_cells : DefaultPieceCells(cells);
    // Every text file of the view from the one pass: data.csv, each .txt,
    // each var-sized .bin (ls -l of the root and attributes/ pays once).
    const std::vector<std::string> fields = CsvFields(scope.view->schema());
    ASSIGN_OR_RETURN(std::optional<ViewLayouts> extended,
                     ExtendIndexed(scope, fields, cells, piece));
    ViewLayouts all;
    if (extended) {
      all = std::move(*extended);
    } else {
      ++layout_passes_;
      ASSIGN_OR_RETURN(all, ComputeViewLayouts(*scope.view, fields, scope.enums.get(), cells, piece,
                                               options_.layout_batch_cells));
    }
    ToIndex(scope, all);
    PutLayouts(scope, std::move(all), pending.get(), key);
    std::shared_ptr<const StreamLayout> wanted = passed();
    if (!wanted) {
      return Error::InvalidArgument(fmt::format("{}: not a text file of the view", key));
    }
    return wanted;
  }();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_layouts_.find(pass_key);
    if (it != pending_layouts_.end() && it->second == pending) pending_layouts_.erase(it);
  }
  return computed;
}

Result<std::shared_ptr<const ParquetSource>> ArrayTree::Parquet(const Scope& scope) {
  const std::string key = scope.key + "parquet";
  if (auto hit = caches_->parquet.Get(key)) return hit;
  const core::ArraySchema& schema = scope.view->schema();
  std::vector<ParquetField> fields;
  bool needs = false;
  for (const std::string& name : CsvFields(schema)) {
    ParquetField f;
    f.name = name;
    if (int d = schema.DimensionIndex(name); d >= 0) {
      f.type = schema.dimensions[d].type;
      f.cell_val_num = schema.dimensions[d].cell_val_num;
      f.dimension = true;
    } else {
      const core::Attribute& a = schema.attributes[schema.AttributeIndex(name)];
      f.type = a.type;
      f.cell_val_num = a.cell_val_num;
      f.nullable = a.nullable;
      if (scope.enums) f.enumeration = EnumerationFor(schema, *scope.enums, name);
    }
    needs = needs ||
            ParquetNeedsOf(f.type, f.cell_val_num, f.nullable, f.dimension, f.enumeration).any();
    fields.push_back(std::move(f));
  }
  ASSIGN_OR_RETURN(uint64_t cells, scope.view->CellCount());
  uint64_t piece = options_.piece_cells != 0 ? options_.piece_cells : DefaultPieceCells(cells);
  if (needs) {
    // The view's one pass (or its index entry) counts them, cut as the
    // text files are.
    std::shared_ptr<const ParquetCountsMap> counts;
    ASSIGN_OR_RETURN(std::shared_ptr<const StreamLayout> csv, Layout(scope, CellFile{}, &counts));
    piece = csv->piece_cells;
    for (ParquetField& f : fields) {
      if (auto it = counts->find(f.name); it != counts->end()) f.counts = it->second;
    }
  }
  Json view;
  // The array by its name, not where it is served from: the same view
  // read from a local copy or from S3 gives the same bytes.
  std::string root = scope.array->storage().root();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  view["array"] = std::filesystem::path(root).filename().string();
  view["instant_ms"] = scope.view->instant();
  view["instant"] = FormatIso(static_cast<int64_t>(scope.view->instant()));
  if (scope.fragment) view["fragment"] = scope.fragment->name().name;
  if (!scope.slice.empty()) view["slice"] = scope.slice;
  std::map<std::string, std::string> metadata = {
      {"tiledb.view", core::DumpJsonText(view, -1)},
      {"tiledb.schema", core::SchemaToJson(schema, scope.enums.get())}};
  // The first dimension's statistics: a dense view's coordinates cost no
  // tile; a sparse view's come from the pass, where it ran (read from the
  // cells, they would build every window of the view's cell order).
  const bool stats = !schema.dimensions.empty() && fields[0].dimension &&
                     (scope.view->dense() || !fields[0].counts.ends.empty());
  ASSIGN_OR_RETURN(ParquetPlan plan,
                   ParquetPlan::Make(std::move(fields), cells, piece, std::move(metadata), stats));
  std::optional<std::vector<ParquetPlan::MinMax>> first_dim = plan.StatsFromEnds(piece);
  auto source =
      std::make_shared<const ParquetSource>(scope.view, std::move(plan), std::move(first_dim));
  caches_->parquet.Put(key, source, source->footprint());
  return source;
}

namespace {

// `header` bytes then `cells` cells of `cell_size` bytes; kOutOfMemory past
// 2^64 (a hostile cell count or cell_val_num).
Result<uint64_t> SizeOfCells(uint64_t header, uint64_t cells, uint64_t cell_size) {
  uint64_t size;
  if (core::MulOverflow(cells, cell_size, &size) || core::AddOverflow(size, header, &size)) {
    return Error::OutOfMemory(
        fmt::format("{} cells of {} bytes do not fit in a file", cells, cell_size));
  }
  return size;
}

}  // namespace

Result<uint64_t> ArrayTree::CellFileSize(const Scope& scope, const CellFile& f) {
  using Kind = CellFile::Kind;
  // A sparse view's cells counted on an earlier mount: no window to build.
  // Once per view: its layouts come with them, and stay cached.
  if (!scope.view->dense() &&
      (f.kind == Kind::kFixed || f.kind == Kind::kNpy || f.kind == Kind::kParquet)) {
    bool first;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (index_counted_.size() >= 4096) index_counted_.clear();
      first = index_counted_.insert(scope.key).second;
    }
    if (first) FromIndex(scope, nullptr, "");
  }
  switch (f.kind) {
    case Kind::kParquet: {
      ASSIGN_OR_RETURN(std::shared_ptr<const ParquetSource> source, Parquet(scope));
      return source->plan().size();
    }
    case Kind::kFixed: {
      ASSIGN_OR_RETURN(uint64_t cells, scope.view->CellCount());
      return SizeOfCells(0, cells, f.cell_size());
    }
    case Kind::kNpy: {
      ASSIGN_OR_RETURN(uint64_t cells, scope.view->CellCount());
      ASSIGN_OR_RETURN(std::string header, NpyHeader(*scope.view, f.type, f.cell_val_num));
      return SizeOfCells(header.size(), cells, f.cell_size());
    }
    case Kind::kValidity:
      return scope.view->CellCount();
    case Kind::kVarOffsets: {
      ASSIGN_OR_RETURN(uint64_t cells, scope.view->CellCount());
      return SizeOfCells(8, cells, 8);
    }
    case Kind::kVarData:
    case Kind::kTxt:
    case Kind::kDataCsv: {
      ASSIGN_OR_RETURN(std::shared_ptr<const StreamLayout> layout, Layout(scope, f));
      return layout->size();
    }
  }
  return Error::InvalidArgument("unknown cell file");
}

Result<std::unique_ptr<OpenFile>> ArrayTree::OpenCellFile(const Scope& scope, const CellFile& f) {
  using Kind = CellFile::Kind;
  switch (f.kind) {
    case Kind::kParquet: {
      ASSIGN_OR_RETURN(std::shared_ptr<const ParquetSource> source, Parquet(scope));
      return MakeParquetFile(std::move(source));
    }
    case Kind::kFixed:
    case Kind::kNpy:
    case Kind::kValidity: {
      ASSIGN_OR_RETURN(uint64_t cells, scope.view->CellCount());
      std::string header;
      if (f.kind == Kind::kNpy) {
        ASSIGN_OR_RETURN(header, NpyHeader(*scope.view, f.type, f.cell_val_num));
      }
      bool validity = f.kind == Kind::kValidity;
      TRY(SizeOfCells(header.size(), cells, validity ? 1 : f.cell_size()));
      return MakeFieldRangeFile(scope.view, f.field,
                                validity ? FieldPart::kValidity : FieldPart::kData,
                                std::move(header), cells, validity ? 1 : f.cell_size());
    }
    case Kind::kVarOffsets: {
      CellFile data = f;
      data.kind = Kind::kVarData;
      ASSIGN_OR_RETURN(std::shared_ptr<const StreamLayout> data_layout, Layout(scope, data));
      auto layout = std::make_shared<const StreamLayout>(VarOffsetsLayout(*data_layout));
      return MakeStreamedFile(layout, MakeVarOffsetsRenderer(scope.view, f.field, data_layout));
    }
    case Kind::kVarData:
    case Kind::kTxt:
    case Kind::kDataCsv: {
      ASSIGN_OR_RETURN(std::shared_ptr<const StreamLayout> layout, Layout(scope, f));
      auto renderer =
          RendererFor(scope, f.field, f.kind == Kind::kDataCsv, f.kind == Kind::kVarData);
      return MakeStreamedFile(layout, std::move(renderer));
    }
  }
  return Error::InvalidArgument("unknown cell file");
}

}  // namespace tiledbfs::fusefs
