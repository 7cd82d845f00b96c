#include "core/metadata/timestamped_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "core/directory/array_directory.h"

namespace tiledbfs::core::internal {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool ByTimestamp(const TimestampedFile& a, const TimestampedFile& b) {
  if (a.name < b.name) return true;
  if (b.name < a.name) return false;
  return a.path < b.path;
}

}  // namespace

Result<TimestampedFolder> ListTimestampedFolder(const Storage& storage, const std::string& dir,
                                                const Limits& limits) {
  TimestampedFolder folder;
  auto listing = storage.List(dir);
  if (!listing.ok()) {
    if (listing.error().code() == ErrorCode::kNotFound) return folder;
    return listing.error().WithContext(dir);
  }
  if (listing->size() > limits.max_files) {
    return Error::OutOfMemory(fmt::format("{}: {} entries, more than the limit of {}", dir,
                                          listing->size(), limits.max_files));
  }
  for (const DirEntry& e : *listing) {
    if (e.is_dir) continue;
    // Partial writes (TileDB writes "<name>.tmp" and renames it when done).
    if (EndsWith(e.name, ".tmp")) continue;
    ASSIGN_OR_RETURN_CTX(TimestampedName name, ParseTimestampedName(e.name), JoinPath(dir, e.name));
    TimestampedFile f{JoinPath(dir, e.name), std::move(name)};
    // TileDB tells vacuum files by the suffix alone; any other file of the
    // folder is a data file, whatever its extension.
    if (EndsWith(e.name, ".vac")) {
      folder.vacuums.push_back(std::move(f));
    } else {
      folder.files.push_back(std::move(f));
    }
  }
  std::sort(folder.files.begin(), folder.files.end(), ByTimestamp);
  return folder;
}

namespace {

std::string_view BaseName(std::string_view path) {
  return path.substr(path.find_last_of('/') + 1);  // npos + 1 == 0
}

// The last path parts of the files a vacuum file names.
Result<std::vector<std::string>> VacuumedNames(const Storage& storage, const TimestampedFile& vac,
                                               const Limits& limits) {
  ASSIGN_OR_RETURN_CTX(uint64_t size, storage.Size(vac.path), vac.path);
  if (size > limits.max_metadata_bytes) {
    return Error::OutOfMemory(fmt::format("{}: vacuum file of {} bytes, more than the limit of {}",
                                          vac.path, size, limits.max_metadata_bytes));
  }
  ASSIGN_OR_RETURN_CTX(ByteVec contents, storage.Read(vac.path, 0, size), vac.path);
  ASSIGN_OR_RETURN_CTX(std::vector<std::string> names, ParseUriList(contents), vac.path);
  for (std::string& n : names) n = std::string(BaseName(n));
  return names;
}

}  // namespace

Result<std::vector<TimestampedFile>> SelectAtTimestamp(const Storage& storage,
                                                       const TimestampedFolder& folder,
                                                       uint64_t timestamp_end,
                                                       const Limits& limits) {
  std::set<std::string_view> present;
  for (const TimestampedFile& f : folder.files) present.insert(BaseName(f.path));
  // Names retired by vacuum files that are visible at timestamp_end, and by
  // any vacuum file some of whose files are gone while others remain: a
  // vacuum under way (or one that stopped) takes the rest too, so a view
  // before the consolidated file shows never reads the survivors alone.
  std::set<std::string, std::less<>> retired;
  for (const TimestampedFile& vac : folder.vacuums) {
    Result<std::vector<std::string>> listed = VacuumedNames(storage, vac, limits);
    // Gone since the listing: its vacuum has ended, and its files with it.
    if (!listed.ok() && listed.error().code() == ErrorCode::kNotFound) continue;
    ASSIGN_OR_RETURN(std::vector<std::string> names, std::move(listed));
    const bool partly_vacuumed = std::any_of(
        names.begin(), names.end(), [&](const std::string& n) { return present.count(n) == 0; });
    if (vac.name.t2 > timestamp_end && !partly_vacuumed) continue;
    retired.insert(names.begin(), names.end());
  }

  std::vector<TimestampedFile> selected;
  for (const TimestampedFile& f : folder.files) {
    if (f.name.t2 > timestamp_end) continue;
    if (retired.find(BaseName(f.path)) != retired.end()) continue;
    selected.push_back(f);
  }
  return selected;
}

}  // namespace tiledbfs::core::internal
