// net::HttpServer: the asynchronous HTTP/1.1 server under the gateway (gateway_server.cc),
// the emulator (emulator_server.cc) and the daemon's REST API (api_server.cc). It binds,
// accepts, bounds open connections, reads each request with a deadline for the whole request
// (a fresh connection has header_timeout to send it, a kept-alive one idle_timeout before the
// next), refuses what is too large or malformed before the owner sees it (431 for a header
// over max_header_bytes or max_header_fields, 413 for a body over max_body_bytes, chunked or
// not, 400 for bytes that are not HTTP), lets the owner refuse a request from its header
// alone (`gate`: a client without a token cannot make the server buffer its body), answers
// `Expect: 100-continue`, and hands the request to the owner's handler, a coroutine that
// writes the response and says whether the connection may be kept.
//
// Why Boost.Asio + Beast (Debian's libboost1.81-dev) and not cpp-httplib: one coroutine per
// connection on a few threads holds thousands of concurrent streams on 2 cores, where a
// thread per connection runs out (64 emulator threads were exhausted by 128 clients).
//
// A request's Transfer-Encoding must be chunked alone (RFC 9112 6.1, 6.3): 400 when the final
// coding is not chunked ("xchunked", "chunked, identity": Beast would read no body and run
// the body's bytes as the next request), 501 for another coding before chunked.
//
// Each I/O thread runs an io_context of its own and every connection stays on one of them
// (round robin at accept), the model of nginx's workers and HAProxy's threads: a handler's
// timers and wake-ups posted from other threads (post to the handler's executor) never run
// while the handler runs, and what a connection keeps between requests (the gateway's
// pooled replica connections) stays registered with its thread's reactor. One io_context
// shared by every thread with a strand per connection cost the gateway a futex wake-up and
// three epoll_ctl calls per proxied request (scripts/gateway-bench).
//
// Coroutine bodies built on this pass only named values to co_await calls: GCC 12 can
// destroy a temporary of a full-expression that contains co_await twice (a double free seen
// here with a conditional expression's std::string).
//
// Thread-safety: Start/Stop from one thread; connections() and port() from any thread.
#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "net/connection_table.h"

namespace gpuscale::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;
using StringResponse = http::response<http::string_body>;

// co_await op(..., kTuple) yields (error_code, result...) instead of throwing.
inline constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                    // 0 = the kernel picks one
  std::string field = "--port";    // what bind errors name (a flag or a config field)
  int threads = 1;                 // I/O threads, each running an io_context of its own
  int max_connections = 20000;     // open client connections (ConnectionTable says who
                                   // a newcomer displaces past it)
  int max_connections_per_client = 0;  // per peer address; 0 = no cap
  int64_t max_body_bytes = 32 << 20;
  uint32_t max_header_bytes = 64 * 1024;  // request line + fields
  int max_header_fields = 100;
  Seconds header_timeout{15};      // a fresh connection's first request (slowloris bound)
  Seconds idle_timeout{120};       // a keep-alive connection between requests
  // Called with +1 when a connection is accepted and -1 when it closes (metrics); any thread.
  std::function<void(int delta)> on_connection;
  // Called with each request's header, before its body is read: a response refuses the
  // request (it is sent and the connection closes, the body unread); nullopt goes on. Runs on
  // the connection's I/O thread, so it must not block. Empty = every request goes on.
  std::function<std::optional<http::response<http::string_body>>(
      const http::request<http::string_body>& header)>
      gate;
};

// The owner's request handler: writes the response to `stream` (WriteResponse or its own
// streaming) and returns whether the connection may serve another request.
using Handler = std::function<asio::awaitable<bool>(beast::tcp_stream& stream, Request& req)>;
// The response to a request the server refuses itself (the connection then closes):
// 400 (not HTTP), 413 (body over max_body_bytes) or 431 (header over its limits), with a
// message saying which limit. `partial` holds what was parsed (its target, maybe headers).
using RejectReply = std::function<StringResponse(const Request& partial, http::status status,
                                                 const std::string& message)>;

class HttpServer {
 public:
  // Binds host:port and starts options.threads I/O threads. Errors: kInvalidArgument (field
  // options.field) for a host that is not an IP address, kUnavailable when it cannot bind.
  static Result<std::unique_ptr<HttpServer>> Start(HttpServerOptions options, Handler handler,
                                                   RejectReply reject);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Closes the listener; open connections go on (their handlers decide). Idempotent.
  void StopAccepting();
  // Stops the io_context (every pending coroutine is destroyed, closing its sockets) and
  // joins the I/O threads. Idempotent.
  void Stop();

  int port() const { return port_; }
  std::string url() const;  // "http://host:port", IPv6 in brackets
  int connections() const { return connections_.load(); }
  // The I/O threads' contexts in turn, for an owner's own sockets (each I/O object is used
  // only from the thread of the context it was made on).
  asio::io_context& NextContext();

 private:
  HttpServer(HttpServerOptions options, Handler handler, RejectReply reject);
  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> Session(tcp::socket socket, ConnectionTable::Id id);
  // The header checks before the body: field count, then the owner's gate.
  std::optional<StringResponse> Screen(const Request& header) const;
  // The reply to a failed header or body read: reject_'s response, or nullopt when the
  // client is gone (closed, reset, timed out) and nothing is sent.
  std::optional<StringResponse> Refusal(const Request& partial,
                                        const boost::system::error_code& ec) const;

  const HttpServerOptions options_;
  const Handler handler_;
  const RejectReply reject_;
  std::atomic<int> connections_{0};
  ConnectionTable table_;  // before contexts_: coroutine frames destroyed with them use it
  std::atomic<size_t> next_context_{0};
  std::vector<std::unique_ptr<asio::io_context>> contexts_;  // one per I/O thread
  tcp::acceptor acceptor_;                                   // on contexts_[0]
  std::vector<std::thread> threads_;
  int port_ = 0;
  bool stopped_ = false;
};

// Writes `res` (keep-alive as the request asked; headers only, Content-Length kept, for a
// HEAD request) with a write timeout, so that a client that stops reading cannot hold the
// connection. True when written.
asio::awaitable<bool> WriteResponse(beast::tcp_stream& stream, const Request& req,
                                    StringResponse& res);

// What a connected socket holds, without taking it: nothing yet, bytes, or the peer's close
// (or an error). Lets a handler that waits on other work notice a client that hung up.
enum class PeekResult { kQuiet, kData, kClosed };
PeekResult Peek(int fd);

// A client that stops reading fails a write after this long.
inline constexpr std::chrono::seconds kClientWriteTimeout{60};

// Config durations (double seconds) as the steady clock's ticks.
inline std::chrono::steady_clock::duration Ticks(Seconds s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(s);
}

}  // namespace gpuscale::net
