// HTTP over libcurl for the S3 storage: a pool of easy handles, each
// keeping its kept-alive connections, sharing one DNS cache and TLS session
// cache (CURLSH), so requests reuse connections and resume TLS sessions. https is verified
// against the system CA store; plain http is allowed (loopback stores).
// Thread-safe: any number of threads may Perform at once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/util/bytes.h"

namespace tiledbfs::core::s3 {

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  // The body is kept up to this many bytes; past it the transfer stops and
  // HttpResponse::capped is set (a lying server cannot make us allocate).
  uint64_t max_body = uint64_t{1} << 20;
};

struct HttpResponse {
  // 0 when no response came (transport_error says why).
  long status = 0;
  std::map<std::string, std::string> headers;  // names lowercased; the last of repeats
  ByteVec body;
  bool capped = false;          // the body reached max_body and the transfer stopped
  std::string transport_error;  // curl's reason: refused, timed out, reset...
  bool retryable = false;       // transport errors worth another attempt
};

class HttpClient {
 public:
  struct Options {
    int64_t connect_timeout_ms = 3000;
    // Abandon a transfer that moves less than 1 byte/s for this long.
    int64_t stall_timeout_s = 10;
  };
  explicit HttpClient(Options options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // One request, one attempt; never throws. Transport failures come back in
  // HttpResponse::transport_error with status 0.
  HttpResponse Perform(const HttpRequest& request) const;

 private:
  struct Shared;
  void* TakeHandle() const;
  void GiveHandle(void* handle) const;

  Options options_;
  std::unique_ptr<Shared> shared_;
  mutable std::mutex pool_mu_;
  mutable std::vector<void*> pool_;
};

}  // namespace tiledbfs::core::s3
