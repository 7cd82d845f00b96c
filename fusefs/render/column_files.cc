#include "fusefs/render/column_files.h"

#include <iterator>

namespace tiledbfs::fusefs {

namespace {

// The files a field may show, in the order of the enum, each with the
// fields that show it (docs/namespace.md "An array").
struct FieldFile {
  ColumnFile file;
  std::string_view extension;
  bool (*shown)(bool var, bool nullable, uint32_t cell_val_num);
};

constexpr FieldFile kFieldFiles[] = {
    {ColumnFile::kBin, ".bin", [](bool, bool, uint32_t) { return true; }},
    {ColumnFile::kOffsets, ".offsets", [](bool var, bool, uint32_t) { return var; }},
    {ColumnFile::kValidity, ".validity", [](bool, bool nullable, uint32_t) { return nullable; }},
    {ColumnFile::kNpy, ".npy", [](bool var, bool, uint32_t cvn) { return !var && cvn != 0; }},
    {ColumnFile::kTxt, ".txt", [](bool, bool, uint32_t) { return true; }},
};

constexpr bool InEnumOrder() {
  for (size_t i = 0; i < std::size(kFieldFiles); ++i) {
    if (static_cast<size_t>(kFieldFiles[i].file) != i) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "ColumnFileExtension indexes kFieldFiles by the enum");

}  // namespace

std::vector<ColumnFile> ColumnFiles(core::Datatype t, uint32_t cell_val_num, bool nullable) {
  const bool var = cell_val_num == core::kVarNum;
  std::vector<ColumnFile> files;
  for (const FieldFile& f : kFieldFiles) {
    if (f.shown(var, nullable, cell_val_num)) files.push_back(f.file);
  }
  return files;
}

std::vector<ColumnFile> ColumnFiles(const core::Column& c) {
  return ColumnFiles(c.type, c.cell_val_num, c.nullable);
}

std::string_view ColumnFileExtension(ColumnFile f) {
  return kFieldFiles[static_cast<size_t>(f)].extension;
}

std::optional<ColumnFile> ColumnFileFromName(std::string_view file_name, std::string_view* stem) {
  for (const FieldFile& f : kFieldFiles) {
    std::string_view ext = f.extension;
    if (file_name.size() > ext.size() && file_name.ends_with(ext)) {
      if (stem != nullptr) *stem = file_name.substr(0, file_name.size() - ext.size());
      return f.file;
    }
  }
  return std::nullopt;
}

}  // namespace tiledbfs::fusefs
