#include "core/storage/open/open_storage.h"

#include <fmt/format.h>

#include "core/storage/s3/s3_storage.h"

namespace tiledbfs::core {

bool IsLocalUri(std::string_view uri) { return !s3::IsS3Uri(uri); }

Result<std::shared_ptr<const Storage>> OpenStorage(const std::string& uri,
                                                   const StorageOptions& options,
                                                   const Limits& limits) {
  if (s3::IsS3Uri(uri)) {
    ASSIGN_OR_RETURN(s3::S3Config config, s3::ResolveS3Config(options.s3));
    ASSIGN_OR_RETURN(auto s3, s3::S3Storage::Open(uri, config, limits, options.immutable_folder,
                                                  options.kept_file, options.stash));
    return std::shared_ptr<const Storage>(std::move(s3));
  }
  ASSIGN_OR_RETURN(auto local, LocalStorage::Open(uri));
  return std::shared_ptr<const Storage>(std::move(local));
}

Result<std::string> ResolveMemberUri(const std::string& group_uri, const std::string& uri,
                                     bool relative) {
  if (relative) return group_uri + "/" + uri;
  if (s3::IsS3Uri(uri)) return uri;
  if (uri.rfind("file://", 0) == 0) return uri.substr(7);
  if (!uri.empty() && uri[0] == '/') return uri;
  return Error::Unsupported(fmt::format("URI {} is neither a local folder nor s3://", uri));
}

}  // namespace tiledbfs::core
