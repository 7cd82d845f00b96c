// The persistent index as a FileStash (core/storage/storage_options.h):
// whole metadata files of arrays on S3 (schemas, fragment footers, commit
// lists, array metadata), so that a remount with a warm index makes LISTs
// only (issue 51). Each file is one entry of the IndexStore, keyed by its
// location, size and version (the ETag its listing gives): a file
// rewritten under its name with other bytes misses. Entries are checked as
// every entry is (key and checksum: IndexStore::Get); one whose payload is
// not `size` bytes is dropped with one log line, and the caller fetches
// the file again and stores it anew.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "core/index/index_store.h"
#include "core/storage/storage_options.h"

namespace tiledbfs::core {

// The key of a file's entry (tests damage the entry through PathOf).
std::string StashKey(const std::string& where, uint64_t size, const std::string& version);

class IndexFileStash final : public FileStash {
 public:
  explicit IndexFileStash(std::shared_ptr<IndexStore> store) : store_(std::move(store)) {}

  std::optional<ByteVec> Get(const std::string& where, uint64_t size,
                             const std::string& version) override;
  void Put(const std::string& where, uint64_t size, const std::string& version,
           Bytes bytes) override;

  // Files answered and files handed to the store since made: the store's
  // own IndexStats count these among its hits and writes.
  uint64_t found() const { return found_.load(std::memory_order_relaxed); }
  uint64_t stored() const { return stored_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<IndexStore> store_;
  std::atomic<uint64_t> found_{0}, stored_{0};
};

}  // namespace tiledbfs::core
