// The process's request to stop (issue 50): set once the process is ending
// (the daemon got SIGTERM, SIGINT or SIGHUP, or its mount went away), never
// cleared. Work that can run for seconds (tile reads and decodes, cell index
// builds and sorts, S3 transfers and their retries) checks it between its
// steps and gives up with kCancelled, so that a daemon asked to stop does
// not first finish a request that would run for many seconds more.
//
// One flag for the process, not one per mount or request: what sets it is a
// signal, and a signal is delivered to the process.
//
// A kCancelled result says nothing about the array: it must never be kept
// as data, nor remembered as a failure (caches, failed listings). The FUSE
// adapter answers it with EINTR (fusefs/model/tree.h, ErrnoFor).
#pragma once

#include <chrono>
#include <string_view>

#include "core/util/result.h"

namespace tiledbfs::core {

// Sets the flag. Async-signal-safe (a store to a lock-free atomic): for
// signal handlers.
void RequestStop() noexcept;

// True once RequestStop has been called. One atomic load: cheap enough for
// every tile or batch, not meant for every cell.
bool StopRequested() noexcept;

// Ok, or once stop was requested kCancelled "<what>: cancelled: the process
// is stopping".
Status CheckStop(std::string_view what);

// Sleeps for `d` (a retry's backoff), in slices of at most kStopSlice so
// that a stop requested meanwhile ends it within one slice. False if stop
// was requested (before or during the sleep).
bool SleepUnlessStopped(std::chrono::milliseconds d);
inline constexpr std::chrono::milliseconds kStopSlice{20};

}  // namespace tiledbfs::core
