// FUSE_INIT flags that libfuse 3.14 cannot ask for.
//
// libfuse answers the kernel's FUSE_INIT request itself, with the flags its
// 32-bit fuse_conn_info::want can name. FUSE_DIRECT_IO_ALLOW_MMAP (protocol
// 7.39, Linux 6.6) is not one of them. Without it the kernel refuses a
// shared mapping (mmap MAP_SHARED: np.load(mmap_mode='r'), np.memmap) of a
// file opened with direct_io (ENODEV); with it, such a mapping reads through
// the page cache as for any other open.
//
// KernelInit sits on the session's device I/O (fuse_session_custom_io, the
// same read and writev, through hooks): it notes the INIT request as libfuse
// reads it, and adds to libfuse's reply the wanted flags that the request
// offered. Every other message passes through untouched. Layouts:
// include/uapi/linux/fuse.h (fuse_in_header, fuse_init_in, fuse_out_header,
// fuse_init_out; flags2 since 7.36).
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace tiledbfs::fusefs {

// FUSE_DIRECT_IO_ALLOW_MMAP of include/uapi/linux/fuse.h (7.39), missing
// from older kernel headers: bit 4 of flags2.
inline constexpr uint64_t kInitDirectIoAllowMmap = uint64_t{1} << 36;

struct InitRequest {
  uint64_t unique = 0;
  uint32_t major = 0, minor = 0;
  uint64_t flags = 0;  // flags, with flags2 above them when FUSE_INIT_EXT is set
};

// `msg` as read from the device: the INIT request it holds, or nullopt for
// any other message (or one too short for its header and fuse_init_in up
// to the flags it declares).
std::optional<InitRequest> ParseInitRequest(std::span<const uint8_t> msg);

// Adds `flags` (bits of either half; FUSE_INIT_EXT is set with any of the
// upper half) to an INIT reply message (fuse_out_header, fuse_init_out), in
// place. False, leaving it unchanged, for an error reply, a length field
// that is not the message's, or a reply too short to hold flags2 (a
// protocol before 7.23).
bool AddInitReplyFlags(std::span<uint8_t> reply, uint64_t flags);

class KernelInit {
 public:
  // `wanted`: the flags to add to the INIT reply, where the kernel offers them.
  explicit KernelInit(uint64_t wanted) : wanted_(wanted) {}

  // After a read of `msg` from the device (any thread; cheap once INIT is seen).
  void OnRead(std::span<const uint8_t> msg);
  // Before a write of the reply `iov` to the device: true if it is the INIT
  // reply and wanted flags were added, the message to write instead then in
  // `patched`. Sets granted().
  bool Patch(std::span<const iovec> iov, std::vector<uint8_t>* patched);
  // The wanted flags the kernel was told (valid once the INIT reply went
  // out, which is before any other request arrives).
  uint64_t granted() const { return granted_.load(std::memory_order_acquire); }

 private:
  const uint64_t wanted_;
  std::atomic<bool> seen_{false};     // the INIT request was read
  std::atomic<uint64_t> unique_{0};   // its unique, until its reply is patched
  std::atomic<uint64_t> offered_{0};  // the wanted flags it offered
  std::atomic<uint64_t> granted_{0};
};

}  // namespace tiledbfs::fusefs
