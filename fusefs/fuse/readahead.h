// The kernel's readahead of a mount. A FUSE mount's backing device starts
// with the kernel's default window (read_ahead_kb, 128 KiB), and the kernel
// keeps the smaller of that and the max_readahead the daemon asks for, so
// sequential reads of a file arrive as 128 KiB requests whatever FUSE_INIT
// says. Raising the device's read_ahead_kb after the mount (root only: it
// is a file under /sys/class/bdi) lets them arrive as requests of up to
// max_read: 8 times fewer for the 1 MiB the adapter serves (BENCHMARKS.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/util/result.h"

namespace tiledbfs::fusefs {

// The device ("major:minor") of the newest mount at `mountpoint` (an
// absolute path without trailing slash) in a /proc/self/mountinfo text, or
// nullopt. Mount points in that text escape space, tab, newline and
// backslash as \ooo.
std::optional<std::string> MountDevice(std::string_view mountinfo, std::string_view mountpoint);

// Sets read_ahead_kb of the device mounted at `mountpoint` to `kib`.
// `mountpoint` is the path as mountinfo shows it, resolved (realpath)
// before the mount: resolving it after would wait on the daemon itself.
// kNotFound if the mount is not in /proc/self/mountinfo, kIo (with the
// file and errno) if the setting cannot be written: not root, no sysfs.
core::Status SetMountReadahead(const std::string& mountpoint, uint64_t kib);

}  // namespace tiledbfs::fusefs
