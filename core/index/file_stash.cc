#include "core/index/file_stash.h"

#include <fmt/format.h>

namespace tiledbfs::core {
namespace {

// The format of a stashed file's key and payload (the payload is the
// file's bytes as they are).
constexpr int kStashFormat = 1;

}  // namespace

std::string StashKey(const std::string& where, uint64_t size, const std::string& version) {
  return fmt::format("tiledbfs file {}\n{}\n{}\n{}", kStashFormat, where, size, version);
}

std::optional<ByteVec> IndexFileStash::Get(const std::string& where, uint64_t size,
                                           const std::string& version) {
  const std::string key = StashKey(where, size, version);
  std::optional<std::string> payload = store_->Get(key);
  if (!payload) return std::nullopt;
  if (payload->size() != size) {
    store_->Drop(key, fmt::format("it holds {} bytes of {}, whose listing says {}", payload->size(),
                                  where, size));
    return std::nullopt;
  }
  found_.fetch_add(1, std::memory_order_relaxed);
  return ByteVec(payload->begin(), payload->end());
}

void IndexFileStash::Put(const std::string& where, uint64_t size, const std::string& version,
                         Bytes bytes) {
  if (bytes.size() != size) return;
  stored_.fetch_add(1, std::memory_order_relaxed);
  store_->Put(StashKey(where, size, version), AsStringView(bytes));
}

}  // namespace tiledbfs::core
