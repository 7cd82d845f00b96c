// A source opened from its URI, whichever backend holds it, so that no layer
// above core names one: "s3://bucket/prefix" is S3 (core/storage/s3/),
// anything else a local folder. A new backend is one more branch here.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/storage/storage.h"
#include "core/storage/storage_options.h"
#include "core/util/limits.h"
#include "core/util/result.h"

namespace tiledbfs::core {

// Whether `uri` names a local folder (a path, to be made absolute as paths
// are), not an object store's URI.
bool IsLocalUri(std::string_view uri);

// Opens the folder `uri` names. `limits` bound what its listings may hold
// (Limits::max_files). Errors: kNotFound (no such folder, nothing under the
// prefix), kInvalidArgument (bad URI or settings), kAccessDenied (no or
// refused credentials), kIo (endpoint unreachable), kOutOfMemory.
Result<std::shared_ptr<const Storage>> OpenStorage(const std::string& uri,
                                                   const StorageOptions& options,
                                                   const Limits& limits);

// The URI of a group member that the group at `group_uri` lists as `uri`
// (relative to the group's folder when `relative`): s3:// URIs and
// absolute paths as they are, file:// URIs as their paths. Errors:
// kUnsupported (a scheme no backend here reads).
Result<std::string> ResolveMemberUri(const std::string& group_uri, const std::string& uri,
                                     bool relative);

}  // namespace tiledbfs::core
