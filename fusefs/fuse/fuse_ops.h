// The request handlers behind FuseAdapter (fuse_adapter.h): the libfuse
// low-level operations, each a noexcept static function that replies to
// its request, and the handles of open files and directories.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fusefs/fuse/fuse_adapter.h"

namespace tiledbfs::fusefs {

// An open file: the snapshot the Tree gave at open, and a lock so that
// concurrent reads of one handle (readahead) do not race inside it.
struct FileHandle {
  std::unique_ptr<OpenFile> file;
  std::string path;  // for messages
  uint64_t ino = 0;
  // Of the inode's snapshot (kernel_cache.h): may fill the page cache. An
  // open of another snapshot reads with direct_io and fills nothing.
  bool pages = true;
  std::atomic<bool> refused_fill{false};  // a page fill was refused and logged
  std::mutex mu;
};

// An open directory (kernels that send OPENDIR): the listing taken at
// opendir, so that readdir serves offsets from one consistent snapshot and
// cannot fail after the first entry. Otherwise listings.h holds it.
struct DirHandle {
  std::string path;
  std::vector<DirEntryAttr> entries;
};

// The table of request handlers, for fuse_session_new.
fuse_lowlevel_ops RequestHandlers();
// Reads and writes of /dev/fuse (fuse_session_custom_io).
fuse_custom_io DeviceIo();

}  // namespace tiledbfs::fusefs
