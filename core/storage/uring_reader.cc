#include "core/storage/uring_reader.h"

#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tiledbfs::core {
namespace {

// Queue entries: three per file in flight.
constexpr unsigned kEntries = 256;
static_assert(UringReader::kSlots * 3 <= kEntries);

enum Op : uint64_t { kOpen = 0, kRead = 1, kClose = 2 };

unsigned Load(const unsigned* p) {
  return std::atomic_ref<const unsigned>(*p).load(std::memory_order_acquire);
}
void Store(unsigned* p, unsigned v) {
  std::atomic_ref<unsigned>(*p).store(v, std::memory_order_release);
}

void* Map(int fd, size_t size, uint64_t what) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                 static_cast<off_t>(what));
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

std::unique_ptr<UringReader> UringReader::Create() {
#if defined(__NR_io_uring_setup) && defined(__NR_io_uring_enter) && defined(__NR_io_uring_register)
  std::unique_ptr<UringReader> r(new UringReader());
  io_uring_params p{};
  const long fd = ::syscall(__NR_io_uring_setup, kEntries, &p);
  if (fd < 0) return nullptr;
  r->ring_ = static_cast<int>(fd);
  r->sq_map_size_ = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  r->cq_map_size_ = p.cq_off.cqes + p.cq_entries * sizeof(io_uring_cqe);
  const bool single = (p.features & IORING_FEAT_SINGLE_MMAP) != 0;
  if (single) r->sq_map_size_ = r->cq_map_size_ = std::max(r->sq_map_size_, r->cq_map_size_);
  r->sq_map_ = Map(r->ring_, r->sq_map_size_, IORING_OFF_SQ_RING);
  if (r->sq_map_ == nullptr) return nullptr;
  r->cq_map_ = single ? r->sq_map_ : Map(r->ring_, r->cq_map_size_, IORING_OFF_CQ_RING);
  if (r->cq_map_ == nullptr) return nullptr;
  r->sqes_map_size_ = p.sq_entries * sizeof(io_uring_sqe);
  r->sqes_map_ = Map(r->ring_, r->sqes_map_size_, IORING_OFF_SQES);
  if (r->sqes_map_ == nullptr) return nullptr;
  auto* sq = static_cast<char*>(r->sq_map_);
  auto* cq = static_cast<char*>(r->cq_map_);
  r->sq_tail_ = reinterpret_cast<unsigned*>(sq + p.sq_off.tail);
  r->sq_mask_ = reinterpret_cast<unsigned*>(sq + p.sq_off.ring_mask);
  r->sq_array_ = reinterpret_cast<unsigned*>(sq + p.sq_off.array);
  r->cq_head_ = reinterpret_cast<unsigned*>(cq + p.cq_off.head);
  r->cq_tail_ = reinterpret_cast<unsigned*>(cq + p.cq_off.tail);
  r->cq_mask_ = reinterpret_cast<unsigned*>(cq + p.cq_off.ring_mask);
  r->cqes_ = cq + p.cq_off.cqes;
  r->sqes_ = r->sqes_map_;
  if (p.sq_entries < kEntries || p.cq_entries < kEntries) return nullptr;
  // The fixed descriptor slots the files are opened into (sparse: empty).
  io_uring_rsrc_register reg{};
  reg.nr = kSlots;
  reg.flags = IORING_RSRC_REGISTER_SPARSE;
  if (::syscall(__NR_io_uring_register, r->ring_, IORING_REGISTER_FILES2, &reg, sizeof(reg)) < 0) {
    return nullptr;
  }
  return r;
#else
  return nullptr;
#endif
}

UringReader::~UringReader() {
  if (sqes_map_ != nullptr) munmap(sqes_map_, sqes_map_size_);
  if (cq_map_ != nullptr && cq_map_ != sq_map_) munmap(cq_map_, cq_map_size_);
  if (sq_map_ != nullptr) munmap(sq_map_, sq_map_size_);
  if (ring_ >= 0) ::close(ring_);
}

bool UringReader::Read(int root_fd, std::span<Item> items) {
  for (size_t from = 0; from < items.size(); from += kSlots) {
    const size_t n = std::min(kSlots, items.size() - from);
    if (!RunGroup(root_fd, items.subspan(from, n))) return false;
  }
  return true;
}

bool UringReader::RunGroup(int root_fd, std::span<Item> group) {
  // Each file: open into slot k, read from it, close it. Hard links, so the
  // read and the close run even when the step before failed (on an empty
  // slot they fail with EBADF): every slot is empty again at the end.
  open_how how{};
  how.flags = O_RDONLY;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  auto* sqes = static_cast<io_uring_sqe*>(sqes_);
  const unsigned mask = *sq_mask_;
  unsigned tail = *sq_tail_;
  auto next = [&]() -> io_uring_sqe* {
    const unsigned at = tail & mask;
    sq_array_[at] = at;
    ++tail;
    io_uring_sqe* s = &sqes[at];
    std::memset(s, 0, sizeof(*s));
    return s;
  };
  for (size_t k = 0; k < group.size(); ++k) {
    const Item& it = group[k];
    io_uring_sqe* s = next();
    s->opcode = IORING_OP_OPENAT2;
    s->fd = root_fd;
    s->addr = reinterpret_cast<uintptr_t>(it.path);
    s->len = sizeof(how);
    s->off = reinterpret_cast<uintptr_t>(&how);
    s->file_index = static_cast<uint32_t>(k + 1);
    s->flags = IOSQE_IO_HARDLINK;
    s->user_data = (k << 2) | kOpen;
    s = next();
    s->opcode = IORING_OP_READ;
    s->fd = static_cast<int>(k);
    s->addr = reinterpret_cast<uintptr_t>(it.out);
    s->len = it.n;
    s->off = it.offset;
    s->flags = IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;
    s->user_data = (k << 2) | kRead;
    s = next();
    s->opcode = IORING_OP_CLOSE;
    s->file_index = static_cast<uint32_t>(k + 1);
    s->user_data = (k << 2) | kClose;
  }
  Store(sq_tail_, tail);

  const unsigned total = static_cast<unsigned>(group.size() * 3);
  std::vector<int32_t> opened(group.size(), -1), read(group.size(), -1);
  unsigned submitted = 0, reaped = 0;
  bool broken = false;
  int polls = 0;
  while (reaped < (broken ? submitted : total)) {
    if (!broken) {
      // Submits what is left, then waits for every completion (the kernel
      // skips the wait when it took fewer entries than offered).
      const long r = ::syscall(__NR_io_uring_enter, ring_, total - submitted, total - reaped,
                               IORING_ENTER_GETEVENTS, nullptr, 0);
      if (r >= 0) {
        submitted += static_cast<unsigned>(r);
      } else if (errno != EINTR && errno != EAGAIN && errno != EBUSY) {
        // Nothing taken: nothing is in flight, the ring is given up.
        if (submitted == 0) return false;
        broken = true;
      }
    } else {
      // Entries in flight still write into the items: wait for them (the
      // kernel posts their completions without us), however long it takes.
      if (++polls > 30000) std::abort();  // 30 s: the kernel lost them
      timespec ms{0, 1000000};
      nanosleep(&ms, nullptr);
    }
    unsigned head = *cq_head_;
    const unsigned cq_tail = Load(cq_tail_);
    const unsigned cq_mask = *cq_mask_;
    auto* cqes = static_cast<io_uring_cqe*>(cqes_);
    for (; head != cq_tail; ++head) {
      const io_uring_cqe& c = cqes[head & cq_mask];
      const size_t k = static_cast<size_t>(c.user_data >> 2);
      const uint64_t op = c.user_data & 3;
      if (k < group.size()) {
        if (op == kOpen) opened[k] = c.res;
        if (op == kRead) read[k] = c.res;
      }
      ++reaped;
    }
    Store(cq_head_, head);
  }
  for (size_t k = 0; k < group.size(); ++k) {
    group[k].done = opened[k] == 0 && read[k] >= 0 && static_cast<uint32_t>(read[k]) == group[k].n;
  }
  return !broken;
}

}  // namespace tiledbfs::core
