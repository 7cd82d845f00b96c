// Internal helpers shared by the array and group listings (not a public API).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/directory/array_directory.h"
#include "core/storage/storage.h"
#include "core/util/limits.h"

namespace tiledbfs::core::directory_internal {

// Entries of `dir` sorted by name; a missing folder is an empty one. kOutOfMemory
// when it holds more than limits.max_files entries. Names and kinds only: a
// file's size may be 0 (Storage::ListKinds).
Result<std::vector<DirEntry>> ListFolder(const Storage& storage, const std::string& dir,
                                         const Limits& limits);

// The whole of a small commit/vacuum file, refusing (kOutOfMemory) files over
// limits.max_metadata_bytes before reading.
Result<ByteVec> ReadSmallFile(const Storage& storage, const std::string& path,
                              const Limits& limits);

// The extension of a file name: from the last '.', or "" if none.
std::string_view Extension(std::string_view file_name);

// Reads a URI list file (.vac, .ign) and reduces its entries
// (ParseUriList); errors name the file.
Result<std::vector<std::string>> ReadUriList(const Storage& storage, const std::string& path,
                                             const Limits& limits);

// Parses the name of `folder`/`file_name` (a .vac file) and reads its entries.
Result<VacuumFile> ReadVacuumFile(const Storage& storage, const std::string& folder,
                                  const std::string& file_name, const Limits& limits);

// ParseTimestampedName, with the error naming `path`.
Result<TimestampedName> ParseNameAt(const std::string& path, std::string_view file_name);

}  // namespace tiledbfs::core::directory_internal
