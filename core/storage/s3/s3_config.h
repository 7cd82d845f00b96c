// Where S3 settings and credentials come from, the way AWS tools take them:
//
//   credentials  -o s3_profile=P: that profile's keys; else AWS_ACCESS_KEY_ID,
//                AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); else the
//                profile AWS_PROFILE (or "default") in ~/.aws/credentials
//                (AWS_SHARED_CREDENTIALS_FILE), then in ~/.aws/config
//                (AWS_CONFIG_FILE, section "[profile P]" or "[default]").
//                -o s3_anonymous: none (unsigned requests, public buckets).
//   region       -o s3_region, AWS_REGION, AWS_DEFAULT_REGION, the profile's
//                `region`, else us-east-1.
//   endpoint     -o s3_endpoint, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the
//                profile's `endpoint_url`, else https://s3.<region>.amazonaws.com.
//   addressing   -o s3_addressing=path|virtual; default path-style with a
//                custom endpoint (MinIO, Ceph, s3rver), virtual-hosted on AWS.
//
// Secrets are read from the environment and files only, never from the
// command line, and never appear in an error message.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/storage/storage_options.h"
#include "core/util/result.h"

namespace tiledbfs::core::s3 {

// What the command line says (core/storage/storage_options.h).
using S3Options = core::S3Options;

struct S3Config {
  std::string endpoint;  // scheme://host[:port], no trailing '/'
  bool custom_endpoint = false;
  std::string region = "us-east-1";
  bool path_style = false;
  bool anonymous = false;
  std::string access_key_id;
  std::string secret_access_key;  // never printed
  std::string session_token;      // never printed
  std::string credentials_from;   // "environment", "profile default in /home/u/.aws/credentials"
  unsigned parallel = 16;         // GETs under way at once, over all callers
  double recheck_seconds = 1.0;   // mutable folders are listed again after this
  // Faults: attempts per request, and the first backoff (doubles, jittered).
  int max_attempts = 6;
  int64_t backoff_ms = 50;
  int64_t max_backoff_ms = 2000;
  int64_t connect_timeout_ms = 3000;
  // A transfer slower than 1 byte/s for this long is abandoned (and retried).
  int64_t stall_timeout_s = 5;
  // No attempt starts this long after a request's first: with the stall
  // timeout, an endpoint that accepts and never answers fails in < 30 s.
  int64_t retry_deadline_ms = 20000;
};

// An INI file as the AWS tools write it: "[section]" lines, "key = value"
// lines, '#' and ';' comments; keys lowercased, values trimmed. Indented
// lines (nested "s3 =" blocks) are skipped. Later duplicates win. Never fails:
// lines that are none of these are ignored, as the AWS CLI does.
std::map<std::string, std::map<std::string, std::string>> ParseIni(std::string_view text);

// Reads a file's text; nullopt when it does not exist or cannot be read.
using FileReader = std::function<std::optional<std::string>(const std::string& path)>;
// Looks up an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// The settings, from `options` over the environment and the AWS files.
// Errors: kInvalidArgument (endpoint not http(s)://, a profile named by
// -o s3_profile that does not exist, parallel 0), kAccessDenied (no
// credentials found and not anonymous, or a key id without its secret).
Result<S3Config> ResolveS3Config(const S3Options& options, const EnvLookup& env,
                                 const FileReader& read_file);

// The same over the process environment and the real files.
Result<S3Config> ResolveS3Config(const S3Options& options);

}  // namespace tiledbfs::core::s3
