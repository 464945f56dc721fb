// Raw loopback sockets for tests of peers that misbehave below HTTP: a port nothing listens
// on (connections refused), a listener nobody accepts from (connected, never answered), and
// a server that trickles one answer a byte at a time (each read well inside any per-read
// timeout, the whole far past it). Header-only; each object owns its descriptors and thread.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
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

}  // namespace gpuscale::testing
