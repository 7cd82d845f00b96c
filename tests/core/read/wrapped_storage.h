// Storages over another, for tests: ForwardingStorage passes every call on;
// RemoteStorage prefers parallel reads, as S3Storage does,
// so that ReadTiles takes its remote path (tile_source.h): it counts the
// ReadMany calls and the most bytes they had under way at once, and can
// hold the first ReadMany until another has begun (parallel reads proven
// without timing: a reader that reads one unit at a time never meets it;
// it is let go after 10 s, unmet); HoldingStorage holds the first Read
// of one file until the test lets it go.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/storage/storage.h"

namespace tiledbfs::core {

// A Storage that passes every call on to another (tests' wrappers derive
// from it and override what they watch).
class ForwardingStorage : public Storage {
 public:
  explicit ForwardingStorage(std::shared_ptr<const Storage> s) : s_(std::move(s)) {}
  Result<ByteVec> Read(const std::string& path, uint64_t offset, uint64_t n) const override {
    return s_->Read(path, offset, n);
  }
  Result<uint64_t> Size(const std::string& path) const override { return s_->Size(path); }
  Result<std::vector<DirEntry>> List(const std::string& dir) const override {
    return s_->List(dir);
  }
  bool Exists(const std::string& path) const override { return s_->Exists(path); }
  bool IsDir(const std::string& path) const override { return s_->IsDir(path); }
  std::string root() const override { return s_->root(); }

 protected:
  std::shared_ptr<const Storage> s_;
};

// A Storage whose first Read of `path` waits, once it has begun, until
// Release (or 10 s, so that a failing test cannot hang).
class HoldingStorage final : public ForwardingStorage {
 public:
  HoldingStorage(std::shared_ptr<const Storage> s, std::string path)
      : ForwardingStorage(std::move(s)), path_(std::move(path)) {}
  Result<ByteVec> Read(const std::string& path, uint64_t offset, uint64_t n) const override {
    if (path == path_) {
      std::unique_lock<std::mutex> lock(mu_);
      if (!entered_) {
        entered_ = true;
        cv_.notify_all();
        cv_.wait_for(lock, std::chrono::seconds(10), [&] { return released_; });
      }
    }
    return ForwardingStorage::Read(path, offset, n);
  }
  void WaitEntered() const {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return entered_; });
  }
  void Release() const {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::string path_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable bool entered_ = false, released_ = false;
};

class RemoteStorage final : public ForwardingStorage {
 public:
  RemoteStorage(std::shared_ptr<const Storage> s, size_t parallel, bool hold_first = false)
      : ForwardingStorage(std::move(s)), parallel_(parallel), hold_first_(hold_first) {}
  size_t PreferredParallelism() const override { return parallel_; }

  std::vector<Result<ByteVec>> ReadMany(std::span<const ReadRequest> requests,
                                        size_t spread = 0) const override {
    uint64_t bytes = 0;
    for (const ReadRequest& r : requests) bytes += r.n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const size_t call = ++calls_;
      spreads_.push_back(spread);
      under_way_ += bytes;
      peak_ = std::max(peak_, under_way_);
      read_bytes_ += bytes;
      cv_.notify_all();
      if (hold_first_ && call == 1) {
        met_ = cv_.wait_for(lock, std::chrono::seconds(10), [&] { return calls_ >= 2; });
      }
    }
    std::vector<Result<ByteVec>> out = s_->ReadMany(requests, spread);
    std::lock_guard<std::mutex> lock(mu_);
    under_way_ -= bytes;
    return out;
  }

  size_t calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  // The `spread` of each ReadMany call, in the order they began.
  std::vector<size_t> spreads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return spreads_;
  }
  // The most bytes ReadMany calls had under way at once; all they read.
  uint64_t peak_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_;
  }
  uint64_t read_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return read_bytes_;
  }
  // With hold_first: whether a second ReadMany began while the first waited.
  bool met() const {
    std::lock_guard<std::mutex> lock(mu_);
    return met_;
  }

 private:
  size_t parallel_;
  bool hold_first_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable size_t calls_ = 0;
  mutable std::vector<size_t> spreads_;
  mutable uint64_t under_way_ = 0, peak_ = 0, read_bytes_ = 0;
  mutable bool met_ = false;
};

}  // namespace tiledbfs::core
