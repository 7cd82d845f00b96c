// Which files a field (attribute or dimension) shows in attributes/ or
// dimensions/ (docs/namespace.md):
//   .bin       always: the raw values
//   .offsets   var-sized only: n+1 uint64 byte offsets into .bin
//   .validity  nullable only: n bytes, 1 = valid, 0 = null
//   .npy       fixed-size only: NumPy format 1.0 (npy.h)
//   .txt       always: one value per line (CSV field rules, no header)
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/format/datatype.h"
#include "core/read/column.h"

namespace tiledbfs::fusefs {

enum class ColumnFile { kBin, kOffsets, kValidity, kNpy, kTxt };

// The files of a field, in the order a directory lists them (the order of
// the enum).
std::vector<ColumnFile> ColumnFiles(core::Datatype t, uint32_t cell_val_num, bool nullable);
std::vector<ColumnFile> ColumnFiles(const core::Column& c);

// ".bin", ".offsets", ".validity", ".npy", ".txt".
std::string_view ColumnFileExtension(ColumnFile f);

// Splits a file name "<escaped name>.<ext>" into the kind, if the extension
// is one of ours; `stem` gets the part before it (still escaped).
std::optional<ColumnFile> ColumnFileFromName(std::string_view file_name, std::string_view* stem);

}  // namespace tiledbfs::fusefs
