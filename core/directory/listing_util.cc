#include "core/directory/listing_util.h"

#include <fmt/format.h>

#include <algorithm>

namespace tiledbfs::core::directory_internal {

Result<std::vector<DirEntry>> ListFolder(const Storage& storage, const std::string& dir,
                                         const Limits& limits) {
  // Names and kinds are all an array's folders are read for: no stat of
  // every commit file.
  auto listed = storage.ListKinds(dir);
  if (!listed.ok()) {
    if (listed.error().code() == ErrorCode::kNotFound) return std::vector<DirEntry>{};
    return listed.error();
  }
  std::vector<DirEntry> entries = std::move(listed).value();
  if (entries.size() > limits.max_files) {
    return Error::OutOfMemory(fmt::format("{}: {} entries, more than the limit of {}",
                                          dir.empty() ? "array folder" : dir, entries.size(),
                                          limits.max_files));
  }
  // Storage::List promises names in order; sorted again only if they are not
  // (issue 5's array (c) has 10,000 names in each of two folders).
  auto by_name = [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; };
  if (!std::is_sorted(entries.begin(), entries.end(), by_name)) {
    std::sort(entries.begin(), entries.end(), by_name);
  }
  return entries;
}

Result<ByteVec> ReadSmallFile(const Storage& storage, const std::string& path,
                              const Limits& limits) {
  ASSIGN_OR_RETURN(uint64_t size, storage.Size(path));
  if (size > limits.max_metadata_bytes) {
    return Error::OutOfMemory(fmt::format("{}: {} bytes, more than the limit of {}", path, size,
                                          limits.max_metadata_bytes));
  }
  return storage.Read(path, 0, size);
}

std::string_view Extension(std::string_view file_name) {
  size_t dot = file_name.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : file_name.substr(dot);
}

Result<std::vector<std::string>> ReadUriList(const Storage& storage, const std::string& path,
                                             const Limits& limits) {
  ASSIGN_OR_RETURN(ByteVec bytes, ReadSmallFile(storage, path, limits));
  ASSIGN_OR_RETURN_CTX(std::vector<std::string> entries, ParseUriList(bytes), path);
  return entries;
}

Result<VacuumFile> ReadVacuumFile(const Storage& storage, const std::string& folder,
                                  const std::string& file_name, const Limits& limits) {
  VacuumFile vac;
  vac.path = folder.empty() ? file_name : JoinPath(folder, file_name);
  ASSIGN_OR_RETURN(vac.name, ParseNameAt(vac.path, file_name));
  ASSIGN_OR_RETURN(vac.entries, ReadUriList(storage, vac.path, limits));
  return vac;
}

Result<TimestampedName> ParseNameAt(const std::string& path, std::string_view file_name) {
  ASSIGN_OR_RETURN_CTX(TimestampedName name, ParseTimestampedName(file_name), path);
  return name;
}

}  // namespace tiledbfs::core::directory_internal
