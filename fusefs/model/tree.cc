#include "fusefs/model/tree.h"

#include <fmt/format.h>

#include <cerrno>

#include "core/directory/array_directory.h"
#include "core/index/file_stash.h"
#include "core/metadata/group.h"
#include "core/storage/open/open_storage.h"
#include "fusefs/model/group_tree.h"

namespace tiledbfs::fusefs {

Result<size_t> OpenFile::ReadPieces(uint64_t offset, size_t n, core::Pieces* out) {
  auto buf = std::make_shared<core::ByteVec>(n);
  ASSIGN_OR_RETURN(size_t got, Read(offset, *buf));
  out->Add(buf->data(), got);
  out->keep.push_back(std::move(buf));
  return got;
}

Result<std::unique_ptr<Tree>> OpenFolder(const std::string& path, const TreeOptions& options,
                                         std::shared_ptr<TreeCaches> caches) {
  core::StorageOptions storage_options = options.storage;
  // Arrays' and groups' fragments are never rewritten (core/directory).
  storage_options.immutable_folder = core::IsImmutableFolder;
  // On S3, metadata files are kept in the persistent index: a remount then
  // GETs none of them (issue 51). A stash given (tiledbfs-index's, which
  // counts its files) is used as it is.
  if (options.index && !storage_options.stash) {
    storage_options.stash = std::make_shared<core::IndexFileStash>(options.index);
  }
  if (storage_options.stash) storage_options.kept_file = core::IsMetadataFile;
  ASSIGN_OR_RETURN(std::shared_ptr<const core::Storage> storage,
                   core::OpenStorage(path, storage_options, options.limits));
  if (core::IsGroup(*storage)) {
    ASSIGN_OR_RETURN(auto g, GroupTree::Open(path, storage, options, std::move(caches)));
    return std::unique_ptr<Tree>(std::move(g));
  }
  ASSIGN_OR_RETURN(auto a, ArrayTree::Open(storage, options, std::move(caches)));
  return std::unique_ptr<Tree>(std::move(a));
}

Result<std::unique_ptr<Tree>> OpenTree(const std::string& source, const TreeOptions& options) {
  auto caches = std::make_shared<TreeCaches>(options.cache_bytes);
  caches->heap = options.heap;
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
