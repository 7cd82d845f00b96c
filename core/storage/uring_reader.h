// Many small ranged reads for the price of a few system calls: an io_uring
// in which the kernel opens each file beneath the storage root, reads the
// range and closes the file, one linked chain per file on a fixed descriptor
// slot (no file descriptor ever enters the process's table). Made for the
// tile files of many small fragments (10,000 fragments: 30,000 files, where
// open + pread + close one after another cost more than the decoding).
//
// Only a fast path: an item that does not come back whole (any error, a
// short read) is left for the caller to read the plain way, which gives the
// error its usual words. Where io_uring is missing or refused (old kernel,
// seccomp, kernel.io_uring_disabled) Create gives null.
//
// Not thread-safe: one caller at a time (LocalStorage lends each ring to one
// caller).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace tiledbfs::core {

class UringReader {
 public:
  // One range: `n` bytes at `offset` of `path` (relative to the root
  // descriptor, already checked by the caller) into `out`.
  struct Item {
    const char* path = nullptr;
    uint64_t offset = 0;
    uint32_t n = 0;
    uint8_t* out = nullptr;
    bool done = false;  // set when all n bytes were read
  };

  // Files in flight at once (three queue entries each).
  static constexpr size_t kSlots = 64;

  static std::unique_ptr<UringReader> Create();
  ~UringReader();
  UringReader(const UringReader&) = delete;
  UringReader& operator=(const UringReader&) = delete;

  // Reads every item (at most kSlots at a time), setting `done` on those
  // read whole. False if the ring itself failed before taking the items
  // (then nothing is in flight and the ring should not be used again).
  bool Read(int root_fd, std::span<Item> items);

 private:
  UringReader() = default;
  // Submits the group's queue entries and waits for all their completions.
  bool RunGroup(int root_fd, std::span<Item> group);

  int ring_ = -1;
  void* sq_map_ = nullptr;
  size_t sq_map_size_ = 0;
  void* cq_map_ = nullptr;  // == sq_map_ when the kernel maps both at once
  size_t cq_map_size_ = 0;
  void* sqes_map_ = nullptr;
  size_t sqes_map_size_ = 0;
  // Pointers into the mapped rings.
  unsigned* sq_tail_ = nullptr;
  unsigned* sq_mask_ = nullptr;
  unsigned* sq_array_ = nullptr;
  unsigned* cq_head_ = nullptr;
  unsigned* cq_tail_ = nullptr;
  unsigned* cq_mask_ = nullptr;
  void* cqes_ = nullptr;
  void* sqes_ = nullptr;
};

}  // namespace tiledbfs::core
