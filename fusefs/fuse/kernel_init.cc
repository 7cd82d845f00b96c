#include "fusefs/fuse/kernel_init.h"

#include <linux/fuse.h>

#include <cstddef>
#include <cstring>

namespace tiledbfs::fusefs {
namespace {

// The T at `offset` of `b`, or nullopt past its end.
template <class T>
std::optional<T> Load(std::span<const uint8_t> b, size_t offset) {
  if (offset > b.size() || sizeof(T) > b.size() - offset) return std::nullopt;
  T v;
  std::memcpy(&v, b.data() + offset, sizeof(T));
  return v;
}

template <class T>
void Store(std::span<uint8_t> b, size_t offset, T v) {
  std::memcpy(b.data() + offset, &v, sizeof(T));
}

constexpr size_t kIn = sizeof(fuse_in_header);
constexpr size_t kOut = sizeof(fuse_out_header);

}  // namespace

std::optional<InitRequest> ParseInitRequest(std::span<const uint8_t> msg) {
  const auto len = Load<uint32_t>(msg, offsetof(fuse_in_header, len));
  const auto opcode = Load<uint32_t>(msg, offsetof(fuse_in_header, opcode));
  if (!len || !opcode || *opcode != FUSE_INIT || *len > msg.size()) return std::nullopt;
  msg = msg.first(*len);
  InitRequest r;
  const auto unique = Load<uint64_t>(msg, offsetof(fuse_in_header, unique));
  const auto major = Load<uint32_t>(msg, kIn + offsetof(fuse_init_in, major));
  const auto minor = Load<uint32_t>(msg, kIn + offsetof(fuse_init_in, minor));
  const auto flags = Load<uint32_t>(msg, kIn + offsetof(fuse_init_in, flags));
  if (!unique || !major || !minor || !flags) return std::nullopt;
  r.unique = *unique;
  r.major = *major;
  r.minor = *minor;
  r.flags = *flags;
  if (*flags & FUSE_INIT_EXT) {
    const auto flags2 = Load<uint32_t>(msg, kIn + offsetof(fuse_init_in, flags2));
    if (!flags2) return std::nullopt;
    r.flags |= uint64_t{*flags2} << 32;
  }
  return r;
}

bool AddInitReplyFlags(std::span<uint8_t> reply, uint64_t flags) {
  const auto len = Load<uint32_t>(reply, offsetof(fuse_out_header, len));
  const auto error = Load<int32_t>(reply, offsetof(fuse_out_header, error));
  const size_t at_flags = kOut + offsetof(fuse_init_out, flags);
  const size_t at_flags2 = kOut + offsetof(fuse_init_out, flags2);
  const auto low = Load<uint32_t>(reply, at_flags);
  const auto high = Load<uint32_t>(reply, at_flags2);
  if (!len || *len != reply.size() || !error || *error != 0 || !low || !high) return false;
  uint32_t new_low = *low | static_cast<uint32_t>(flags);
  const uint32_t new_high = *high | static_cast<uint32_t>(flags >> 32);
  if (new_high != 0) new_low |= FUSE_INIT_EXT;
  Store(reply, at_flags, new_low);
  Store(reply, at_flags2, new_high);
  return true;
}

void KernelInit::OnRead(std::span<const uint8_t> msg) {
  if (seen_.load(std::memory_order_relaxed)) return;
  const std::optional<InitRequest> r = ParseInitRequest(msg);
  if (!r) return;
  // A major version above 7 is answered with libfuse's own version and sent
  // again as 7.x: only a 7.x request is patched.
  if (r->major != 7) return;
  offered_.store(r->flags & wanted_, std::memory_order_relaxed);
  unique_.store(r->unique, std::memory_order_relaxed);
  seen_.store(true, std::memory_order_release);
}

bool KernelInit::Patch(std::span<const iovec> iov, std::vector<uint8_t>* patched) {
  const uint64_t unique = unique_.load(std::memory_order_acquire);
  if (unique == 0 || iov.empty()) return false;
  const std::span<const uint8_t> head(static_cast<const uint8_t*>(iov[0].iov_base), iov[0].iov_len);
  const auto reply_to = Load<uint64_t>(head, offsetof(fuse_out_header, unique));
  if (!reply_to || *reply_to != unique) return false;
  unique_.store(0, std::memory_order_relaxed);
  const uint64_t offered = offered_.load(std::memory_order_relaxed);
  if (offered == 0) return false;
  patched->clear();
  for (const iovec& v : iov) {
    const auto* p = static_cast<const uint8_t*>(v.iov_base);
    patched->insert(patched->end(), p, p + v.iov_len);
  }
  if (!AddInitReplyFlags(*patched, offered)) return false;
  granted_.store(offered, std::memory_order_release);
  return true;
}

}  // namespace tiledbfs::fusefs
