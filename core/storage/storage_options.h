// What a source is opened with (OpenStorage, core/storage/open/open_storage.h):
// each backend's settings as the command line gives them, and which folders
// the format above says never change once they exist.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/util/bytes.h"

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

// Whether file `path` (storage-relative) is one a store over the network
// should keep whole in a FileStash: a small file a listing names with a
// version and that is read whole anyway (the format knows which:
// core/directory/array_directory.h IsMetadataFile), never bulk data.
using KeptFile = std::function<bool(std::string_view path)>;

// Whole files kept across processes (issue 51: the persistent index keeps
// them, core/index/file_stash.h), each under the file's full location (a
// URI), its size and its version as a listing reports them (S3: the ETag),
// so that a file rewritten under its name with other bytes misses.
// Thread-safe. Neither call fails: a stash that cannot answer or store only
// costs the reads it would have saved.
class FileStash {
 public:
  virtual ~FileStash() = default;
  // The file's bytes, exactly `size` of them, or nullopt.
  virtual std::optional<ByteVec> Get(const std::string& where, uint64_t size,
                                     const std::string& version) = 0;
  virtual void Put(const std::string& where, uint64_t size, const std::string& version,
                   Bytes bytes) = 0;
};

struct StorageOptions {
  S3Options s3;
  ImmutableFolder immutable_folder;  // null: every folder may change
  // Both set: files over the network that `kept_file` names are read from
  // and written to `stash` (local folders ignore them).
  KeptFile kept_file;
  std::shared_ptr<FileStash> stash;
};

}  // namespace tiledbfs::core
