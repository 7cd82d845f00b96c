#include "core/directory/group_directory.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "core/directory/listing_util.h"

namespace tiledbfs::core {
namespace {

using directory_internal::Extension;
using directory_internal::ListFolder;
using directory_internal::ParseNameAt;
using directory_internal::ReadVacuumFile;

constexpr std::string_view kGroupFile = "__tiledb_group.tdb";
constexpr std::string_view kDetailDir = "__group";
constexpr std::string_view kMetaDir = "__meta";
constexpr std::string_view kVacExt = ".vac";

// Timestamped files of `dir` without extension, and its .vac files.
Status ListTimestampedFolder(const Storage& storage, const std::string& dir, const Limits& limits,
                             std::vector<TimestampedName>* files,
                             std::vector<VacuumFile>* vacuums) {
  ASSIGN_OR_RETURN(std::vector<DirEntry> entries, ListFolder(storage, dir, limits));
  for (const DirEntry& e : entries) {
    if (e.is_dir) continue;
    std::string_view ext = Extension(e.name);
    if (ext.empty()) {
      ASSIGN_OR_RETURN(TimestampedName n, ParseNameAt(JoinPath(dir, e.name), e.name));
      files->push_back(std::move(n));
    } else if (ext == kVacExt) {
      ASSIGN_OR_RETURN(VacuumFile v, ReadVacuumFile(storage, dir, e.name, limits));
      vacuums->push_back(std::move(v));
    }
  }
  std::sort(files->begin(), files->end());
  std::sort(vacuums->begin(), vacuums->end(), [](const VacuumFile& a, const VacuumFile& b) {
    return a.name < b.name || (!(b.name < a.name) && a.path < b.path);
  });
  return Ok();
}

}  // namespace

Result<GroupListing> ListGroup(const Storage& storage, const Limits& limits) {
  GroupListing out;
  ASSIGN_OR_RETURN(std::vector<DirEntry> root, ListFolder(storage, "", limits));
  bool has_detail_dir = false;
  for (const DirEntry& e : root) {
    if (!e.is_dir && e.name == kGroupFile) out.has_group_file = true;
    if (e.is_dir && e.name == kDetailDir) has_detail_dir = true;
  }
  if (!out.has_group_file && !has_detail_dir) {
    return Error::NotFound(
        fmt::format("{}: not a group (no {} and no {}/)", storage.root(), kGroupFile, kDetailDir));
  }
  TRY(ListTimestampedFolder(storage, std::string(kDetailDir), limits, &out.detail_files,
                            &out.detail_vacuums));
  TRY(ListTimestampedFolder(storage, std::string(kMetaDir), limits, &out.metadata_files,
                            &out.metadata_vacuums));
  return out;
}

}  // namespace tiledbfs::core
