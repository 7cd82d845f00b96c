// The persistent index's store (issue 51): what the first look at an array
// computes is written here and reused by every later mount of the same
// array, by any process. Entries are opaque payloads under string keys, one
// file per entry directly in the index folder, named by the hex SHA-256 of
// the key plus ".tfi". An entry file, little-endian:
//
//   offset   type     field
//   0        u8[8]    magic "TFSIDX\0\1"
//   8        u32      format version (kIndexFormat)
//   12       u32      key length K
//   16       u8[K]    key
//   16+K     u64      payload length P
//   24+K     u8[P]    payload
//   24+K+P   u8[32]   SHA-256 of bytes [0, 24+K+P)
//
// Never a wrong answer: an entry is used only when its magic, version,
// lengths, checksum and key all check; anything else is a miss, logged and
// removed. Writers write a temp file in the same folder and rename it over
// the entry, so that readers, in this process or another, see a whole entry
// or none, with no lock across processes. A folder that is read-only or
// full costs only speed. The folder's size is bounded: the entries least
// recently written or read (file mtime) go first. A store scans the folder
// on its first Put, then whenever its own writes since its last scan may
// have taken the folder past the bound, and at least every kScanEvery
// Puts or max_bytes / kScanEvery bytes (other processes' writes are seen
// then): a Put need not stat every entry.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/util/bytes.h"
#include "core/util/result.h"

namespace tiledbfs::core {

inline constexpr uint32_t kIndexFormat = 1;
// What an entry file holds besides its key and payload: magic, version,
// the two lengths and the checksum.
inline constexpr uint64_t kIndexEntryOverhead = 8 + 4 + 4 + 8 + 32;

// The bytes of the entry file for `key` and `payload` (the table above).
// kInvalidArgument if the key is longer than a u32 counts.
Result<std::string> EncodeIndexEntry(std::string_view key, std::string_view payload);

// The payload within the bytes of an entry file (a view into `file`), if
// the file is a whole entry of this format stored under `key`. Errors:
// kUnsupported for another format version; kCorrupt for a wrong magic, a
// truncation, a length past the end, bytes after the checksum, a checksum
// mismatch or another key, each with the offset and field. Allocates
// nothing, whatever the lengths say.
Result<Bytes> ParseIndexEntry(Bytes file, std::string_view key);

// The hex SHA-256 of `text` (empty if OpenSSL fails): a key of a fixed
// size for what is long to name (a view of thousands of fragments).
std::string IndexDigest(std::string_view text);

// The index folder when none is given: $XDG_CACHE_HOME/tiledbfs, else
// $HOME/.cache/tiledbfs (each only if an absolute path); empty when
// neither is set.
std::string DefaultIndexDir();

struct IndexOptions {
  std::string dir;                                 // made 0700 if missing
  uint64_t max_bytes = uint64_t{1} << 30;          // all entries together (-o index_size)
  uint64_t max_entry_bytes = uint64_t{256} << 20;  // largest payload stored or read
  std::function<void(const std::string&)> log;     // one line per problem; null: stderr
};

// Counts since Open. `misses` includes the `rejected` Gets; `write_failures`
// every Put that stored nothing (too big, or the folder failed); `dropped`
// the entries Drop removed.
struct IndexStats {
  uint64_t hits = 0, misses = 0, rejected = 0, writes = 0, write_failures = 0, evicted = 0,
           dropped = 0;
};

// Thread-safe: one store is shared by all threads of a mount, and several
// processes may share one folder.
class IndexStore {
 public:
  // Never fails: a folder that cannot be made or used (its path empty, a
  // parent a regular file, no permission) gives a store whose Get always
  // misses and whose Put does nothing, after one log line. A missing
  // folder is made 0700, as are the missing parents made on the way.
  static std::shared_ptr<IndexStore> Open(IndexOptions options);

  IndexStore(const IndexStore&) = delete;
  IndexStore& operator=(const IndexStore&) = delete;

  bool usable() const { return usable_; }

  // The payload stored under `key`, or nullopt: absent, unreadable, or
  // rejected. A rejected entry (corrupt, truncated, another format version,
  // another key's, a payload over max_entry_bytes) gets one log line naming
  // the file and what is wrong, and its file is removed. A hit makes the
  // entry the most recently used (its mtime is set to now).
  std::optional<std::string> Get(const std::string& key);

  // Stores `payload` under `key` atomically, replacing any entry, then
  // drops the least recently used entries until all of them together are
  // within max_bytes (never the one just written), as far as this store's
  // scans have seen (above). Failures are never
  // reported to the caller: an entry over max_bytes or a payload over
  // max_entry_bytes is not stored; a write that fails (read-only, ENOSPC,
  // EDQUOT, EFBIG, EACCES) leaves no temp file. The first failure of each
  // kind is logged, later ones only counted. After a failure the older
  // entry under `key` is removed where it can be, so that no Get answers
  // with a payload older than the last Put.
  void Put(const std::string& key, std::string_view payload);

  // Removes the entry under `key`, with one log line saying `why`: a payload
  // that checked but turned out not to fit what it describes (a fragment
  // rewritten with other bytes of the same sizes), so that the next mount
  // builds it again rather than trusting it.
  void Drop(const std::string& key, const std::string& why);

  IndexStats stats() const;

  // The path of the entry file for `key` (tests corrupt it).
  std::string PathOf(const std::string& key) const;

 private:
  explicit IndexStore(IndexOptions options);

  Status MakeFolder();
  Status WriteEntry(const std::string& path, std::string_view bytes);
  // A file by device and inode: a path names another one once a writer
  // has renamed a new entry over it.
  struct FileId {
    uint64_t dev = 0, ino = 0;
  };
  // Logs why the entry at `path` is rejected and removes it if it still is
  // the file that was read (`id`), not a new entry renamed over it since.
  void Reject(const std::string& path, std::optional<FileId> id, const Error& e);
  void Evict(const std::string& keep_name, uint64_t entry_size);
  void Log(const std::string& line);
  void LogOnce(std::atomic<bool>& logged, const std::string& line);

  IndexOptions options_;
  bool usable_ = false;
  std::mutex log_mu_;
  std::mutex evict_mu_;  // one eviction scan at a time in this process
  static constexpr uint64_t kScanEvery = 64;
  // Under evict_mu_: whether a scan was made, the entries' total it left,
  // and what this store wrote since.
  bool scanned_ = false;
  uint64_t scanned_total_ = 0, written_since_scan_ = 0, puts_since_scan_ = 0;
  std::atomic<bool> logged_read_failure_{false};
  std::atomic<bool> logged_write_failure_{false};
  std::atomic<bool> logged_too_big_{false};
  std::atomic<uint64_t> hits_{0}, misses_{0}, rejected_{0}, writes_{0}, write_failures_{0},
      evicted_{0}, dropped_{0};
};

}  // namespace tiledbfs::core
