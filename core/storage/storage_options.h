// What a source is opened with (OpenStorage, core/storage/open/open_storage.h):
// each backend's settings as the command line gives them, and which folders
// the format above says never change once they exist.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tiledbfs::core {

// Settings of sources on S3, as given (-o s3_*); unset: from the
// environment and the AWS files (core/storage/s3/s3_config.h says where).
struct S3Options {
  std::optional<std::string> endpoint;
  std::optional<std::string> region;
  std::optional<std::string> profile;
  std::optional<bool> path_style;  // s3_addressing=path (true) / virtual (false)
  bool anonymous = false;
  std::optional<unsigned> parallel;
  std::optional<double> recheck_seconds;
};

// Whether the listing of folder `dir` (storage-relative, '/'-separated)
// never changes once the folder exists, so that a storage listing over the
// network may keep it for its life. The format knows which are
// (core/directory/array_directory.h: IsImmutableFolder).
using ImmutableFolder = std::function<bool(std::string_view dir)>;

struct StorageOptions {
  S3Options s3;
  ImmutableFolder immutable_folder;  // null: every folder may change
};

}  // namespace tiledbfs::core
