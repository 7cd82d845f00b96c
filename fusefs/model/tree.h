// The namespace of a mounted array or group (docs/namespace.md) as a
// tree of directories and files, with no libfuse in sight: the FUSE adapter
// and tiledbfs-view both render it. Paths are relative to the root, without
// a leading slash ("" is the root, "attributes/a.bin"). A Tree is an
// ordinary object: a test can build two in one process.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/filters/filter_pipeline.h"
#include "core/index/index_store.h"
#include "core/storage/storage_options.h"
#include "core/util/heap_policy.h"
#include "core/util/limits.h"
#include "core/util/pieces.h"
#include "core/util/result.h"

namespace tiledbfs::fusefs {

using core::Result;

enum class NodeType { kDirectory, kFile };

struct NodeAttr {
  NodeType type = NodeType::kFile;
  uint64_t size = 0;       // files: exactly the bytes a full read returns
  int64_t mtime_ms = 0;    // the view's instant (a fragment: its end timestamp)
  bool immutable = false;  // history views and pinned timestamps: never change
  // False in a listing for a file whose size was not worked out (it may need
  // rendering or decoding): `size` is meaningless, GetAttr gives it.
  bool sized = true;
};

struct DirEntryAttr {
  std::string name;
  NodeAttr attr;
};

// An open file: a snapshot taken at open; reads of it never change.
class OpenFile {
 public:
  virtual ~OpenFile() = default;
  // Names the bytes: two opens of one path with the same non-zero id read
  // the same bytes (the FUSE adapter then lets them share the kernel's page
  // cache). 0: unknown, every open is taken as different.
  uint64_t snapshot_id = 0;
  int64_t mtime_ms = 0;  // NodeAttr::mtime_ms of the node at open
  virtual uint64_t size() const = 0;
  // Copies up to out.size() bytes at offset; returns the count (less only
  // at end of file). Errors: kCorrupt/kIo etc. from decoding.
  virtual Result<size_t> Read(uint64_t offset, std::span<uint8_t> out) = 0;
  // True if ReadPieces hands out bytes without copying them (pieces of
  // decoded tiles); otherwise Read, into the caller's buffer, is better.
  virtual bool ReadsPieces() const { return false; }
  // True if readers jump between far parts of the file (a Parquet file's
  // column chunks): the kernel then reads no further than asked.
  virtual bool ReadsAtRandom() const { return false; }
  // Appends up to n bytes at offset to `out` (core/util/pieces.h: out->keep
  // holds what the pieces point into); returns the count, less only at end
  // of file. Errors: as Read. The default reads into a buffer of its own.
  virtual Result<size_t> ReadPieces(uint64_t offset, size_t n, core::Pieces* out);
};

struct TreeOptions {
  std::optional<int64_t> timestamp_ms;     // pin the root view (-o timestamp=T)
  std::optional<core::EncryptionKey> key;  // -o key_file=PATH
  uint64_t cache_bytes = uint64_t{256} << 20;
  // Streamed files (streamed_file.h): cells per piece (0: DefaultPieceCells;
  // a diff's CSV files: rows, 0: diff.cc's own) and per batch of the layout
  // pass. Tests make them small so that small arrays make many pieces and
  // batches.
  uint64_t piece_cells = 0;
  uint64_t layout_batch_cells = 65536;
  // How sources are opened (core/storage/storage_options.h): S3 settings
  // over the environment. The tree sets immutable_folder itself.
  core::StorageOptions storage;
  // What untrusted numbers may make any reader allocate, the storage's
  // listings included.
  core::Limits limits;
  // The persistent index (-o index_dir, core/index/index_store.h): what a
  // view's first look computes, kept for every later mount; null: none.
  std::shared_ptr<core::IndexStore> index;
  // How the tile cache meets the allocator (core/util/heap_policy.h),
  // given to it once the mount serves (Tree::Serving); null: none.
  std::shared_ptr<core::HeapPolicy> heap;
};

class Tree {
 public:
  virtual ~Tree() = default;
  virtual Result<NodeAttr> GetAttr(const std::string& path) = 0;
  // Entries of a directory, in a stable order. kNotFound / kInvalidArgument
  // (not a directory).
  virtual Result<std::vector<DirEntryAttr>> List(const std::string& path) = 0;
  virtual Result<std::unique_ptr<OpenFile>> Open(const std::string& path) = 0;

  // Rechecks the source now (a mount calls it about once a second) and
  // returns a count that grows whenever nodes said to be immutable may have
  // changed: a consolidation, a vacuum or a write at an old timestamp
  // rewrote a past view. Errors: as Open.
  virtual Result<uint64_t> Refresh() { return uint64_t{0}; }

  // A mount starts serving (after the daemon's fork, so threads started
  // now live on): work ahead of the first reads may start.
  virtual void Serving() {}
};

// Opens an array or a group folder and checks it can be read (schema parses,
// key works). Errors: kNotFound (not an array or group), kKey, kCorrupt...
Result<std::unique_ptr<Tree>> OpenTree(const std::string& source, const TreeOptions& options);

// Error code -> errno, one table for every frontend (docs/style.md 8):
// not found ENOENT, invalid argument EINVAL, access denied EACCES, cancelled
// (the process is stopping, core/util/stop.h) EINTR, anything else EIO.
int ErrnoFor(const core::Error& e);

}  // namespace tiledbfs::fusefs
