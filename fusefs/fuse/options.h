// The command line of `tiledbfs` and the values of its own -o options, parsed
// without libfuse and without I/O (except ReadKeyFile), so a unit test can
// drive every form. Options that are not ours are kept, in order, for
// libfuse (fuse_session_new), which rejects the ones it does not know.
//
//   tiledbfs [options] ARRAY_OR_GROUP MOUNTPOINT
//     -o timestamp=T      pin the root view: T is milliseconds since the
//                         epoch or ISO 8601 UTC, YYYY-MM-DDTHH:MM:SS with
//                         optional fraction and optional Z: exactly the
//                         forms a history/<T> lookup accepts (ParseInstant,
//                         fusefs/model/instant.h)
//     -o key_file=PATH    AES-256-GCM key: 32 raw bytes, or 64 hex digits
//                         (read by ReadKeyFile, fusefs/model/key_file.h)
//     -o cache_size=SIZE  decoded-tile cache: bytes, or with K/M/G/T (binary
//                         multiples, optional B or iB, any case): 256M, 1G
//     -o index=on|off|auto, index_dir=DIR, index_size=SIZE
//                         the persistent index (core/index/index_store.h):
//                         auto (default) keeps one for every array but an
//                         encrypted one; in DIR (default
//                         $XDG_CACHE_HOME/tiledbfs, else ~/.cache/tiledbfs),
//                         of at most SIZE (default 1G)
//     -o page_cache       every open reads through the kernel's page cache
//                         (default: a file's first open streams past it
//                         where the kernel allows: fuse_adapter.h)
//     -o stats            at unmount, log the tiles decoded, by field
//                         (core/read/tile_source.h DecodeStats)
//     -o s3_endpoint=URL, s3_region=R, s3_profile=P, s3_addressing=path|virtual,
//        s3_anonymous, s3_parallel=N, s3_recheck=SECONDS
//                         sources on S3 (ApplyStorageOption below)
//     -o OPT[=V]          any other: passed to libfuse (allow_other, ...)
//     -f                  stay in the foreground
//     -d, -o debug        foreground, and libfuse prints every request
//     -s                  serve with a single thread
//     -h, --help          usage and libfuse's mount options
//     -V, --version       versions
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/storage/storage_options.h"
#include "core/util/result.h"

namespace tiledbfs::fusefs {

using core::Result;

struct CommandLine {
  std::string source;      // ARRAY_OR_GROUP, as given
  std::string mountpoint;  // MOUNTPOINT, as given
  std::optional<int64_t> timestamp_ms;
  std::optional<std::string> key_file;
  std::optional<uint64_t> cache_bytes;
  std::string index = "auto";            // -o index
  std::optional<std::string> index_dir;  // -o index_dir
  std::optional<uint64_t> index_bytes;   // -o index_size
  bool page_cache = false;               // -o page_cache
  bool stats = false;                    // -o stats
  core::StorageOptions storage;          // -o s3_*
  bool foreground = false;
  bool debug = false;
  bool single_thread = false;
  bool help = false;     // the positional arguments are then not required
  bool version = false;  // likewise
  // Options for libfuse, one per element, without "-o" ("allow_other",
  // "fsname=x"). 'ro' is dropped (every mount is read-only); 'debug' sets
  // `debug` instead.
  std::vector<std::string> fuse_options;
};

// Parses the arguments after argv[0]. Errors: kInvalidArgument with a message
// for the user ("unknown option -x", "missing MOUNTPOINT", "bad timestamp
// 'x': ...", "'rw' is not supported: tiledbfs mounts are read-only").
Result<CommandLine> ParseCommandLine(std::span<const std::string> args);

// Applies one -o item if it names a storage setting: s3_endpoint=URL,
// s3_region=R, s3_profile=P, s3_addressing=path|virtual, s3_anonymous,
// s3_parallel=N (1..1024), s3_recheck=SECONDS (0..86400, fractions
// allowed); unset ones come from the environment (ResolveS3Config).
// Returns false for other names. Errors: kInvalidArgument with a message
// for the user (missing or bad value, an unknown s3_ name).
Result<bool> ApplyStorageOption(std::string_view item, core::StorageOptions& options);

// Splits one -o value at commas ("a,b=c" -> {"a", "b=c"}); a backslash
// escapes the next character, as in libfuse. Empty items are dropped.
std::vector<std::string> SplitOptionList(std::string_view list);

// "1700000002000" or "2023-11-14T22:13:20", "...:20.5", "...:20.500Z": the
// model's ParseInstant, with a message for the user. Errors:
// kInvalidArgument (not an instant, before 1970).
Result<int64_t> ParseTimestamp(std::string_view text);

// "1048576", "512K", "256M", "256MiB", "1g", "2T". Errors: kInvalidArgument
// (empty, not a number, unknown suffix, overflows 64 bits).
Result<uint64_t> ParseSize(std::string_view text);

}  // namespace tiledbfs::fusefs
