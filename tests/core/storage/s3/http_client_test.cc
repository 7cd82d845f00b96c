// HttpClient against a loopback server of the test's own that accepts
// every connection, reads its request and answers only when let go: new
// connections are opened at most kMaxConnecting at a time, a turn lasting
// until its response (none here) or kConnectTurn, and every request is
// answered once the server answers. The wait for the connection past the
// turns is a hook (the server's accept), not a sleep; kConnectTurn is a
// lower bound on when it can come, whatever the scheduling.
#include "core/storage/s3/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/util/stop.h"
#include "tests/core/storage/loopback.h"

namespace tiledbfs::core::s3 {
namespace {

using Clock = std::chrono::steady_clock;

class HoldingServer {
 public:
  // In this order: requests answered, no new answerer, then the answerers
  // joined.
  ~HoldingServer() {
    Release();
    acceptor_.Stop();
    for (std::thread& t : answerers_) t.join();
  }
  std::string url() const { return acceptor_.endpoint() + "/x"; }

  // Waits (up to 30 s) until `n` connections were accepted; when the n-th was.
  std::optional<Clock::time_point> WaitAccepted(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(30), [&] { return accepted_.size() >= n; })) {
      return std::nullopt;
    }
    return accepted_[n - 1];
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }

 private:
  void Accept(int c) {
    std::lock_guard<std::mutex> lock(mu_);
    accepted_.push_back(Clock::now());
    cv_.notify_all();
    answerers_.emplace_back([this, c] { Answer(c); });
  }
  void Answer(int c) {
    ReadRequestHead(c);
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return released_; });
    }
    const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    (void)!::write(c, reply.data(), reply.size());
    ::close(c);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Clock::time_point> accepted_;                      // mu_
  std::vector<std::thread> answerers_;                           // mu_ (joined after the acceptor)
  bool released_ = false;                                        // mu_
  LoopbackAcceptor acceptor_{64, [this](int c) { Accept(c); }};  // last: uses the above
};

TEST(HttpClientTest, OpensNewConnectionsAFewAtATime) {
  HoldingServer server;
  HttpClient http(HttpClient::Options{});
  constexpr size_t kRequests = HttpClient::kMaxConnecting + 2;
  const Clock::time_point begin = Clock::now();
  std::vector<HttpResponse> got(kRequests);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      HttpRequest r;
      r.url = server.url();
      got[i] = http.Perform(r);
    });
  }
  // No answer comes: the connection past the first kMaxConnecting waits
  // for a turn to end, kConnectTurn after the first ones began.
  auto past = server.WaitAccepted(HttpClient::kMaxConnecting + 1);
  server.Release();
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(past.has_value()) << "the requests past the turns never connected";
  EXPECT_GE(*past - begin, HttpClient::kConnectTurn);
  for (size_t i = 0; i < kRequests; ++i) {
    EXPECT_EQ(got[i].status, 200) << i << ": " << got[i].transport_error;
    EXPECT_EQ(std::string(got[i].body.begin(), got[i].body.end()), "ok") << i;
  }
}

TEST(HttpClientTest, AStopEndsARequestTheServerHolds) {
  // The stop is never cleared: in a child process, which must exit 0 (at
  // once: the server's threads still hold their connections).
  EXPECT_EXIT(
      {
        HoldingServer server;
        HttpClient http(HttpClient::Options{});
        HttpResponse got;
        std::thread client([&] {
          HttpRequest r;
          r.url = server.url();
          got = http.Perform(r);
        });
        const bool accepted = server.WaitAccepted(1).has_value();
        const Clock::time_point stop = Clock::now();
        RequestStop();
        client.join();
        const auto took = Clock::now() - stop;
        const char* failure = nullptr;
        if (!accepted) {
          failure = "the request never reached the server";
        } else if (!got.cancelled || got.status != 0 || got.retryable) {
          failure = "not cancelled";
        } else if (took > HttpClient::kStopPoll + std::chrono::seconds(2)) {
          failure = "the transfer went on after the stop";
        }
        if (failure != nullptr)
          std::fprintf(stderr, "%s: %s\n", failure, got.transport_error.c_str());
        std::_Exit(failure == nullptr ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace tiledbfs::core::s3
