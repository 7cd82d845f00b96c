#pragma once

// TILEDBFS_ASAN / TILEDBFS_TSAN: 1 in a build under AddressSanitizer /
// ThreadSanitizer, whichever compiler (GCC defines __SANITIZE_*__, clang
// answers __has_feature), else 0.

#if defined(__SANITIZE_ADDRESS__)
#define TILEDBFS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TILEDBFS_ASAN 1
#endif
#endif
#ifndef TILEDBFS_ASAN
#define TILEDBFS_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define TILEDBFS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TILEDBFS_TSAN 1
#endif
#endif
#ifndef TILEDBFS_TSAN
#define TILEDBFS_TSAN 0
#endif
