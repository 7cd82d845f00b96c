// A TCP socket listening on 127.0.0.1 at a port the kernel picks, and the
// thread that accepts on it, for the tests' own servers (a bucket that
// answers LISTs, one that holds requests).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <utility>

namespace tiledbfs::core {

// The listening descriptor, its port in *port; -1 if it cannot be made.
inline int ListenOnLoopback(int backlog, uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
      ::listen(fd, backlog) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

// Accepts connections on loopback on a thread of its own, handing each
// descriptor to `accepted` (on that thread; it owns the descriptor) until
// Stop. A test failure if it cannot listen. Declare it after what
// `accepted` uses, so that it starts last and stops first.
class LoopbackAcceptor {
 public:
  LoopbackAcceptor(int backlog, std::function<void(int)> accepted)
      : accepted_(std::move(accepted)) {
    fd_ = ListenOnLoopback(backlog, &port_);
    if (fd_ < 0) {
      ADD_FAILURE() << "cannot listen on loopback";
      return;
    }
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        accepted_(c);
      }
    });
  }
  ~LoopbackAcceptor() { Stop(); }
  LoopbackAcceptor(const LoopbackAcceptor&) = delete;
  LoopbackAcceptor& operator=(const LoopbackAcceptor&) = delete;

  // Stops accepting; once it returns, `accepted` is not called again.
  void Stop() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::function<void(int)> accepted_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

// Reads from connection `c` up to the end of a request's head (or EOF).
inline std::string ReadRequestHead(int c) {
  std::string request;
  char buf[4096];
  while (request.find("\r\n\r\n") == std::string::npos) {
    const ssize_t n = ::read(c, buf, sizeof(buf));
    if (n <= 0) break;
    request.append(buf, static_cast<size_t>(n));
  }
  return request;
}

}  // namespace tiledbfs::core
