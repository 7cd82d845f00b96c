// Storage: where an array's files live, behind ranged reads and listing.
// Paths are relative to the storage root ("__schema/__1_1_abc"), '/'-separated,
// never absolute and never containing "..". Local files today; an object
// store can implement the same interface later.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/util/bytes.h"
#include "core/util/result.h"

namespace tiledbfs::core {

struct DirEntry {
  std::string name;
  bool is_dir = false;
  uint64_t size = 0;  // files only
  // Files only, where sizes are listed: what changes when the file is
  // written again (LocalStorage: its modification time, which a copy that
  // keeps it, as `cp -a`, keeps too; S3: its ETag; MemoryStorage: a hash
  // of its bytes), so that files of the same name and size but other bytes
  // are told apart without reading them.
  std::string version;
};

// A file's size, and its bytes when it is small enough (Storage::ReadIfSmall).
struct SmallFile {
  uint64_t size = 0;
  std::optional<ByteVec> bytes;
};

// One ranged read of Storage::ReadMany.
struct ReadRequest {
  std::string path;
  uint64_t offset = 0;
  uint64_t n = 0;
};

class UringReader;

class Storage {
 public:
  virtual ~Storage() = default;

  // Reads exactly n bytes at offset. Errors: kNotFound (no such file), kIo,
  // kCorrupt if the file is shorter than offset + n ("truncated").
  virtual Result<ByteVec> Read(const std::string& path, uint64_t offset, uint64_t n) const = 0;
  // Size of a file. kNotFound if missing.
  virtual Result<uint64_t> Size(const std::string& path) const = 0;
  // Entries of a directory, sorted by name; kNotFound if it does not exist.
  virtual Result<std::vector<DirEntry>> List(const std::string& dir) const = 0;
  // The same entries, but a file's `size` may be left 0: for callers that
  // need only names and kinds. LocalStorage then stats only the entries
  // whose kind the directory itself does not give (links, unknown).
  virtual Result<std::vector<DirEntry>> ListKinds(const std::string& dir) const {
    return List(dir);
  }
  // Every file under `dir` at any depth, `name` being its path below `dir`
  // ("a/b.tdb"), with size and version; sorted by name. kNotFound if `dir`
  // does not exist; kOutOfMemory past `max_files` entries. A List per
  // folder here; S3Storage lists the whole prefix at once (a request per
  // 1000 files).
  virtual Result<std::vector<DirEntry>> ListTree(const std::string& dir, size_t max_files) const;
  // Whether a file or directory exists.
  virtual bool Exists(const std::string& path) const = 0;
  virtual bool IsDir(const std::string& path) const = 0;
  // A human-readable location of the root, for messages ("/data/my_array").
  virtual std::string root() const = 0;
  // The modification time of directory `dir` in ns since the epoch: it
  // changes whenever an entry is added to, removed from or renamed in it.
  // nullopt where there is none (the caller then lists the directory).
  virtual std::optional<int64_t> DirModifiedNs(const std::string& dir) const {
    (void)dir;
    return std::nullopt;
  }

  // How many independent reads are worth making at once: 1 where reads are
  // local and cheap, more where each costs a network round trip (S3Storage:
  // -o s3_parallel). Above 1, ReadTiles sends every range of a batch through
  // ReadMany and Array loads fragment footers this many at once.
  virtual size_t PreferredParallelism() const { return 1; }

  // The whole file.
  Result<ByteVec> ReadAll(const std::string& path) const;

  // Many reads at once: result i is what Read(requests[i]...) gives, bytes
  // or error. LocalStorage makes the small ones together (UringReader).
  // `spread`: how many requests S3Storage may cut the batch into to fetch
  // it side by side (0: PreferredParallelism); 1 for a caller that already
  // reads batches side by side and wants each in as few GETs as adjacent
  // ranges allow.
  virtual std::vector<Result<ByteVec>> ReadMany(std::span<const ReadRequest> requests,
                                                size_t spread = 0) const;

  // The file's size, and its bytes if it holds at most `max_bytes` (else
  // `bytes` is empty). Errors as Size and Read. LocalStorage opens the file
  // once for both (many small fragments: one open per metadata file).
  virtual Result<SmallFile> ReadIfSmall(const std::string& path, uint64_t max_bytes) const;
};

// Joins storage-relative paths: JoinPath("__fragments", "x") == "__fragments/x".
std::string JoinPath(const std::string& a, const std::string& b);

// Local directory. Files reached through a symlink that resolves outside the
// root are refused (kNotFound), so a mount never shows anything outside the
// array.
class LocalStorage final : public Storage {
 public:
  // Fails with kNotFound if root is not a directory.
  static Result<std::shared_ptr<LocalStorage>> Open(const std::string& root);

  Result<ByteVec> Read(const std::string& path, uint64_t offset, uint64_t n) const override;
  Result<uint64_t> Size(const std::string& path) const override;
  Result<SmallFile> ReadIfSmall(const std::string& path, uint64_t max_bytes) const override;
  // Reads of up to kBatchedReadBytes go through one io_uring (a few system
  // calls for up to UringReader::kSlots files) where the kernel allows it;
  // the others, and any that do not come back whole, are made by Read.
  std::vector<Result<ByteVec>> ReadMany(std::span<const ReadRequest> requests,
                                        size_t spread = 0) const override;
  static constexpr uint64_t kBatchedReadBytes = uint64_t{1} << 20;
  // Reads ReadMany made through the io_uring (0 where there is none).
  uint64_t batched_reads() const { return batched_reads_.load(std::memory_order_relaxed); }
  Result<std::vector<DirEntry>> List(const std::string& dir) const override;
  Result<std::vector<DirEntry>> ListKinds(const std::string& dir) const override;
  bool Exists(const std::string& path) const override;
  bool IsDir(const std::string& path) const override;
  std::string root() const override { return root_; }
  std::optional<int64_t> DirModifiedNs(const std::string& dir) const override;

 private:
  LocalStorage(std::string root, std::string real_root, int root_fd);
  // Absolute path, or an error if path is malformed or escapes the root.
  Result<std::string> Resolve(const std::string& path) const;
  // List and ListKinds: with `sizes`, every file is stat'ed for its size.
  Result<std::vector<DirEntry>> ListEntries(const std::string& dir, bool sizes) const;
  // Opens `path` with `flags` (O_CLOEXEC added), refusing any way out of the
  // root: one openat2(RESOLVE_BENEATH) from the root's descriptor, where the
  // kernel has it; else Resolve (realpath) then open. The caller closes.
  // kNotFound, kIo ("a link outside the array") or kInvalidArgument.
  Result<int> OpenBeneath(const std::string& path, int flags) const;

 public:
  ~LocalStorage() override;
  LocalStorage(const LocalStorage&) = delete;
  LocalStorage& operator=(const LocalStorage&) = delete;

 private:
  std::string root_;
  std::string real_root_;
  int root_fd_ = -1;  // O_PATH descriptor of real_root_
  // The io_urings of ReadMany, made on first use: one per caller at a time,
  // up to kRings (callers past that read the plain way). None once the
  // kernel refused one.
  static constexpr size_t kRings = 4;
  std::unique_ptr<UringReader> TakeRing() const;
  void GiveRing(std::unique_ptr<UringReader> ring) const;
  mutable std::mutex rings_mu_;
  mutable std::vector<std::unique_ptr<UringReader>> free_rings_;
  mutable size_t rings_made_ = 0;
  mutable bool rings_refused_ = false;
  mutable std::atomic<uint64_t> batched_reads_{0};
};

// In-memory files, for tests and fuzzing. Directories are implied by paths.
class MemoryStorage final : public Storage {
 public:
  void Put(const std::string& path, ByteVec data);

  Result<ByteVec> Read(const std::string& path, uint64_t offset, uint64_t n) const override;
  Result<uint64_t> Size(const std::string& path) const override;
  Result<std::vector<DirEntry>> List(const std::string& dir) const override;
  bool Exists(const std::string& path) const override;
  bool IsDir(const std::string& path) const override;
  std::string root() const override { return "<memory>"; }

 private:
  std::vector<std::pair<std::string, ByteVec>> files_;  // sorted by path
  const ByteVec* Find(const std::string& path) const;
};

}  // namespace tiledbfs::core
