#include "core/metadata/timestamped_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string_view>

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

Result<std::vector<TimestampedFile>> SelectAtTimestamp(const Storage& storage,
                                                       const TimestampedFolder& folder,
                                                       uint64_t timestamp_end,
                                                       const Limits& limits) {
  // Names retired by vacuum files that are visible at timestamp_end.
  std::set<std::string, std::less<>> retired;
  for (const TimestampedFile& vac : folder.vacuums) {
    if (vac.name.t2 > timestamp_end) continue;
    ASSIGN_OR_RETURN_CTX(uint64_t size, storage.Size(vac.path), vac.path);
    if (size > limits.max_metadata_bytes) {
      return Error::OutOfMemory(
          fmt::format("{}: vacuum file of {} bytes, more than the limit of {}", vac.path, size,
                      limits.max_metadata_bytes));
    }
    ASSIGN_OR_RETURN_CTX(ByteVec contents, storage.Read(vac.path, 0, size), vac.path);
    std::string_view text = AsStringView(contents);
    while (!text.empty()) {
      size_t nl = text.find('\n');
      std::string_view line = text.substr(0, nl);
      text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
      if (line.empty()) continue;
      size_t slash = line.find_last_of('/');
      retired.emplace(slash == std::string_view::npos ? line : line.substr(slash + 1));
    }
  }

  std::vector<TimestampedFile> selected;
  for (const TimestampedFile& f : folder.files) {
    if (f.name.t2 > timestamp_end) continue;
    std::string_view base = f.path;
    base = base.substr(base.find_last_of('/') + 1);  // npos + 1 == 0
    if (retired.find(base) != retired.end()) continue;
    selected.push_back(f);
  }
  return selected;
}

}  // namespace tiledbfs::core::internal
