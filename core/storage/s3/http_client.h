// HTTP over libcurl for the S3 storage: a pool of easy handles, each
// keeping its kept-alive connections, sharing one DNS cache and TLS session
// cache (CURLSH), so requests reuse connections and resume TLS sessions. https is verified
// against the system CA store; plain http is allowed (loopback stores).
// Thread-safe: any number of threads may Perform at once.
//
// New connections are opened at most kMaxConnecting at a time: a handle
// that has not yet had a response waits for a turn before its request, and
// gives it back at its response's status line, when the request fails, or
// kConnectTurn after it began (a server slow to answer, not to accept).
// The kernel completes a handshake without the server, and a connection the
// server has not accepted yet waits in its accept queue: sixteen readers'
// first GETs at once overflow a small backlog (Python's socketserver: 5),
// and an overflowed connection's request waits for the server's SYN-ACK
// sent again a second later (the initial RTO). Issue 38, session 34: that
// second, once or twice per run, was a third of a `cat` of a 1 GiB array.
//
// Each handle receives into a buffer of 256 KiB (libcurl's default is 16
// KiB: 60 system calls and callbacks per megabyte of a tile).
//
// A transfer ends within kStopPoll of a stop of the process
// (core/util/stop.h), in any state (resolving, connecting, waiting for a
// server that holds the request, receiving): each handle runs on a multi
// handle of its own, polled at least that often, and a progress callback
// aborts it. (curl_easy_perform polls once a second while a server is
// silent.)
#pragma once

#include <chrono>
#include <condition_variable>
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
  // The process is stopping (core/util/stop.h): the request was not sent,
  // or was abandoned (status 0). Not retryable; says nothing of the server.
  bool cancelled = false;
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
  // HttpResponse::transport_error with status 0; a stop of the process sets
  // HttpResponse::cancelled.
  HttpResponse Perform(const HttpRequest& request) const;

  // New connections being opened at once, over all callers, and the
  // longest a turn to open one lasts.
  static constexpr unsigned kMaxConnecting = 4;
  static constexpr std::chrono::milliseconds kConnectTurn{100};
  // The longest a transfer waits without looking for a stop of the process.
  static constexpr std::chrono::milliseconds kStopPoll{100};

 private:
  struct Shared;
  // A pooled easy handle and the multi handle it runs on (which keeps its
  // kept-alive connections); `answered`: it has had a response, so it holds
  // a kept-alive connection (or knows its server answers).
  struct Handle {
    void* curl = nullptr;
    void* multi = nullptr;
    bool answered = false;
  };
  Handle TakeHandle() const;
  void GiveHandle(Handle handle) const;
  // A turn to open a connection (kMaxConnecting), and its end.
  uint64_t BeginConnect() const;
  void EndConnect(uint64_t turn) const;
  struct Turn {
    uint64_t id = 0;
    std::chrono::steady_clock::time_point start;
  };

  Options options_;
  std::unique_ptr<Shared> shared_;
  mutable std::mutex pool_mu_;
  mutable std::vector<Handle> pool_;
  mutable std::condition_variable connect_cv_;
  mutable std::vector<Turn> turns_;  // pool_mu_; oldest first
  mutable uint64_t turn_ids_ = 0;    // pool_mu_
};

}  // namespace tiledbfs::core::s3
