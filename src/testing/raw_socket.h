// Raw loopback sockets for tests of peers that misbehave below HTTP: a port nothing listens
// on (connections refused), a listener nobody accepts from (connected, never answered), a
// server that trickles one answer a byte at a time (each read well inside any per-read
// timeout, the whole far past it), and a client that sends whatever bytes a test wants
// (half a header, a chunked body, 10,000 fields). Header-only; each object owns its
// descriptors and thread.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace gpuscale::testing {

// A socket listening on 127.0.0.1 at a kernel-chosen port. Connections complete in the
// kernel's backlog; nothing reads them unless the owner accepts.
class RawListener {
 public:
  RawListener() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && listen(fd_, 16) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~RawListener() { Close(); }
  RawListener(const RawListener&) = delete;
  RawListener& operator=(const RawListener&) = delete;

  int port() const { return port_; }  // 0 when the socket could not listen
  // The next connection's descriptor (the caller closes it); < 0 once Close() was called.
  int Accept() { return accept(fd_, nullptr, nullptr); }
  // Stops listening; a blocked Accept() returns < 0. Idempotent.
  void Close() {
    if (fd_ < 0) return;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  int port_ = 0;
};

// A loopback port with nothing listening (bound, then closed): connections are refused.
inline int ClosedLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  return bound ? ntohs(addr.sin_port) : 1;  // port 1: refused too (unprivileged)
}

// Accepts one connection and sends `answer` one byte per `gap`, then closes it.
class TricklingServer {
 public:
  explicit TricklingServer(std::string answer,
                           std::chrono::milliseconds gap = std::chrono::milliseconds(100))
      : thread_([this, answer = std::move(answer), gap] {
          const int conn = listener_.Accept();
          if (conn < 0) return;
          for (char c : answer) {
            if (send(conn, &c, 1, MSG_NOSIGNAL) != 1) break;
            std::this_thread::sleep_for(gap);
          }
          close(conn);
        }) {}
  ~TricklingServer() {
    listener_.Close();
    thread_.join();
  }
  TricklingServer(const TricklingServer&) = delete;
  TricklingServer& operator=(const TricklingServer&) = delete;

  int port() const { return listener_.port(); }

 private:
  RawListener listener_;  // before thread_: listening before the thread accepts
  std::thread thread_;
};

// A client connection to 127.0.0.1:port that sends raw bytes and reads raw answers.
class RawClient {
 public:
  explicit RawClient(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    connected_ = fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawClient() {
    if (fd_ >= 0) close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  // True when every byte was written (false once the server closed or reset).
  bool Send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until `needle` arrived, the server closed, or `timeout` passed; returns what came
  // (everything read so far on this connection).
  std::string ReadUntil(const std::string& needle, std::chrono::milliseconds timeout) {
    return Read([&] { return received_.find(needle) != std::string::npos; }, timeout);
  }
  // Reads until the server closes the connection (or `timeout`).
  std::string ReadAll(std::chrono::milliseconds timeout) {
    return Read([] { return false; }, timeout);
  }
  bool closed() const { return closed_; }
  // Forgets what was read so far (the next ReadUntil looks at new bytes only).
  void Clear() { received_.clear(); }

 private:
  template <typename Done>
  std::string Read(const Done& done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done() && !closed_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buffer[16 * 1024];
      const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      received_.append(buffer, static_cast<size_t>(n));
    }
    return received_;
  }

  int fd_;
  bool connected_ = false;
  bool closed_ = false;
  std::string received_;
};

}  // namespace gpuscale::testing
