// AWS Signature Version 4 for S3 requests, over OpenSSL's SHA-256 and
// HMAC-SHA256. Pure functions of their inputs (no clock, no I/O), so the
// published test-suite vectors check them exactly (tests/data/sigv4/).
// Spec: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tiledbfs::core::s3 {

// Lowercase hex SHA-256 of `data` ("e3b0c442..." for "").
std::string Sha256Hex(std::string_view data);

// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters
// (A-Z a-z 0-9 - . _ ~) kept, every other byte as %XX (uppercase); '/' kept
// when `keep_slash` (object keys in a path), else encoded (query values).
std::string UriEncode(std::string_view s, bool keep_slash);

struct SigningRequest {
  std::string method;         // "GET"
  std::string canonical_uri;  // already encoded: UriEncode(path, true)
  // Query parameters, raw (not encoded); any order.
  std::vector<std::pair<std::string, std::string>> query;
  // The headers to sign, names in any case; host must be among them.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_sha256;  // hex
};

struct SigningKey {
  std::string access_key_id;
  std::string secret_access_key;  // never printed
  std::string region;             // "us-east-1"
  std::string service;            // "s3"
};

// The canonical query string: names and values encoded, sorted by name then
// value, joined with '&'. Also what goes after '?' in the URL, so that the
// bytes sent are the bytes signed.
std::string CanonicalQuery(const std::vector<std::pair<std::string, std::string>>& query);

// The steps of the signature, exposed for the test-suite vectors.
std::string CanonicalRequest(const SigningRequest& r);
std::string StringToSign(const SigningRequest& r, const SigningKey& k, std::string_view amz_date);

// The value of the Authorization header, "AWS4-HMAC-SHA256 Credential=...,
// SignedHeaders=..., Signature=...". `amz_date` is the x-amz-date value
// (YYYYMMDDTHHMMSSZ) that must also be among the signed headers.
std::string Authorization(const SigningRequest& r, const SigningKey& k, std::string_view amz_date);

// x-amz-date for a time in seconds since the epoch: "20150830T123600Z".
std::string AmzDate(int64_t unix_seconds);

}  // namespace tiledbfs::core::s3
