#include "fusefs/model/tree.h"

#include <fmt/format.h>

#include <cerrno>

#include "core/metadata/group.h"
#include "core/storage/s3/s3_storage.h"
#include "fusefs/model/group_tree.h"

namespace tiledbfs::fusefs {

Result<size_t> OpenFile::ReadPieces(uint64_t offset, size_t n, core::Pieces* out) {
  auto buf = std::make_shared<core::ByteVec>(n);
  ASSIGN_OR_RETURN(size_t got, Read(offset, *buf));
  out->Add(buf->data(), got);
  out->keep.push_back(std::move(buf));
  return got;
}

namespace {

Result<std::shared_ptr<const core::Storage>> OpenStorage(const std::string& path,
                                                         const TreeOptions& options) {
  if (core::s3::IsS3Uri(path)) {
    ASSIGN_OR_RETURN(core::s3::S3Config config, core::s3::ResolveS3Config(options.s3));
    ASSIGN_OR_RETURN(auto s3, core::s3::S3Storage::Open(path, config));
    return std::shared_ptr<const core::Storage>(std::move(s3));
  }
  ASSIGN_OR_RETURN(auto local, core::LocalStorage::Open(path));
  return std::shared_ptr<const core::Storage>(std::move(local));
}

}  // namespace

Result<std::unique_ptr<Tree>> OpenFolder(const std::string& path, const TreeOptions& options,
                                         std::shared_ptr<TreeCaches> caches) {
  ASSIGN_OR_RETURN(std::shared_ptr<const core::Storage> storage, OpenStorage(path, options));
  if (core::IsGroup(*storage)) {
    ASSIGN_OR_RETURN(auto g, GroupTree::Open(path, storage, options, std::move(caches)));
    return std::unique_ptr<Tree>(std::move(g));
  }
  ASSIGN_OR_RETURN(auto a, ArrayTree::Open(storage, options, std::move(caches)));
  return std::unique_ptr<Tree>(std::move(a));
}

Result<std::unique_ptr<Tree>> OpenTree(const std::string& source, const TreeOptions& options) {
  auto caches = std::make_shared<TreeCaches>(options.cache_bytes);
  return OpenFolder(source, options, std::move(caches));
}

int ErrnoFor(const core::Error& e) {
  switch (e.code()) {
    case core::ErrorCode::kNotFound:
      return ENOENT;
    case core::ErrorCode::kInvalidArgument:
      return EINVAL;
    case core::ErrorCode::kCorrupt:
    case core::ErrorCode::kUnsupported:
    case core::ErrorCode::kIo:
    // A length over a limit comes from the file (corrupt or hostile), not
    // from a lack of memory; the log line says which limit.
    case core::ErrorCode::kOutOfMemory:
    // The key was checked when the tree opened, so a tile that fails to
    // authenticate later is corrupt (AES-GCM cannot tell the two apart).
    case core::ErrorCode::kKey:
      return EIO;
    // Credentials revoked or expired after the mount: the store refuses.
    case core::ErrorCode::kAccessDenied:
      return EACCES;
    // The daemon is stopping (core/util/stop.h): the request was cut short.
    case core::ErrorCode::kCancelled:
      return EINTR;
  }
  return EIO;
}

}  // namespace tiledbfs::fusefs
