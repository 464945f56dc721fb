#include "orch/http_probe.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

namespace gpuscale::orch {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Milliseconds left until `deadline` (0 when it passed).
int MillisLeft(SteadyClock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Closes the socket however the probe ends.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

// A plain socket rather than an HTTP client library: the probe needs only the status line,
// and `timeout` must bound the whole exchange. cpp-httplib's timeouts apply per read, so a
// replica that trickles its answer a byte at a time held the control loop for minutes.
ProbeResult HttpProbe(int port, const std::string& path, Seconds timeout) {
  const auto deadline =
      SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(timeout);
  Fd sock{socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
  if (sock.fd < 0) return ProbeResult::kFailed;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(sock.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS) return ProbeResult::kFailed;  // refused: nothing listens
    pollfd p{sock.fd, POLLOUT, 0};
    if (poll(&p, 1, MillisLeft(deadline)) <= 0) return ProbeResult::kNoAnswer;
    int error = 0;
    socklen_t len = sizeof error;
    getsockopt(sock.fd, SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) return ProbeResult::kFailed;
  }
  const std::string request =
      "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  // A few dozen bytes into an empty send buffer: one write takes them all.
  if (send(sock.fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return ProbeResult::kFailed;
  }
  // "HTTP/1.1 200 OK\r\n": the status line is all the probe reads.
  std::string head;
  while (head.find("\r\n") == std::string::npos && head.size() < 256) {
    pollfd p{sock.fd, POLLIN, 0};
    if (poll(&p, 1, MillisLeft(deadline)) <= 0) return ProbeResult::kNoAnswer;
    char buf[256];
    const ssize_t n = recv(sock.fd, buf, sizeof buf, 0);
    if (n == 0) return ProbeResult::kFailed;  // closed without a status line
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return ProbeResult::kFailed;  // reset
    }
    head.append(buf, static_cast<size_t>(n));
  }
  // "HTTP/1.x 200" followed by the reason phrase or the line end.
  const size_t space = head.find(' ');
  const bool ok = head.rfind("HTTP/1.", 0) == 0 && space != std::string::npos &&
                  head.compare(space + 1, 3, "200") == 0 && space + 4 < head.size() &&
                  (head[space + 4] == ' ' || head[space + 4] == '\r');
  return ok ? ProbeResult::kOk : ProbeResult::kFailed;
}

}  // namespace gpuscale::orch
