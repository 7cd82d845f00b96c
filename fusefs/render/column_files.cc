#include "fusefs/render/column_files.h"

#include <array>

namespace tiledbfs::fusefs {

std::vector<ColumnFile> ColumnFiles(core::Datatype t, uint32_t cell_val_num, bool nullable) {
  bool var = cell_val_num == core::kVarNum;
  std::vector<ColumnFile> files = {ColumnFile::kBin};
  if (var) files.push_back(ColumnFile::kOffsets);
  if (nullable) files.push_back(ColumnFile::kValidity);
  if (!var && cell_val_num != 0) files.push_back(ColumnFile::kNpy);
  files.push_back(ColumnFile::kTxt);
  return files;
}

std::vector<ColumnFile> ColumnFiles(const core::Column& c) {
  return ColumnFiles(c.type, c.cell_val_num, c.nullable);
}

std::string_view ColumnFileExtension(ColumnFile f) {
  switch (f) {
    case ColumnFile::kBin:
      return ".bin";
    case ColumnFile::kOffsets:
      return ".offsets";
    case ColumnFile::kValidity:
      return ".validity";
    case ColumnFile::kNpy:
      return ".npy";
    case ColumnFile::kTxt:
      return ".txt";
  }
  return "";
}

std::optional<ColumnFile> ColumnFileFromName(std::string_view file_name, std::string_view* stem) {
  static constexpr std::array<ColumnFile, 5> kAll = {ColumnFile::kBin, ColumnFile::kOffsets,
                                                     ColumnFile::kValidity, ColumnFile::kNpy,
                                                     ColumnFile::kTxt};
  for (ColumnFile f : kAll) {
    std::string_view ext = ColumnFileExtension(f);
    if (file_name.size() > ext.size() && file_name.ends_with(ext)) {
      if (stem != nullptr) *stem = file_name.substr(0, file_name.size() - ext.size());
      return f;
    }
  }
  return std::nullopt;
}

}  // namespace tiledbfs::fusefs
