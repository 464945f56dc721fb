#include "net/http_server.h"

#include <fmt/format.h>

namespace gpuscale::net {

HttpServer::HttpServer(HttpServerOptions options, Handler handler, TooLargeReply too_large)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      too_large_(std::move(too_large)),
      acceptor_(ioc_) {}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options, Handler handler,
                                                      TooLargeReply too_large) {
  std::unique_ptr<HttpServer> server(
      new HttpServer(std::move(options), std::move(handler), std::move(too_large)));
  const HttpServerOptions& o = server->options_;
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(o.host, ec);
  if (ec) {
    return InvalidArgument(
        fmt::format("'{}' is not an IP address (e.g. 127.0.0.1 or ::1)", o.host), o.field);
  }
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(o.port));
  tcp::acceptor& acceptor = server->acceptor_;
  acceptor.open(endpoint.protocol(), ec);
  // SO_REUSEADDR only (no SO_REUSEPORT): a second server on the same port must fail, not
  // silently take half of the connections.
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Unavailable(fmt::format("cannot listen on {}:{}: {}", o.host, o.port, ec.message()),
                       o.field);
  }
  server->port_ = acceptor.local_endpoint().port();
  asio::co_spawn(server->ioc_, server->AcceptLoop(), asio::detached);
  const int threads = std::max(1, o.threads);
  for (int i = 0; i < threads; ++i) {
    server->threads_.emplace_back([io = &server->ioc_] { io->run(); });
  }
  return server;
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::StopAccepting() {
  asio::post(acceptor_.get_executor(), [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
  });
}

void HttpServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  StopAccepting();
  ioc_.stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

std::string HttpServer::url() const {
  const std::string& host = options_.host;
  return host.find(':') != std::string::npos ? fmt::format("http://[{}]:{}", host, port_)
                                             : fmt::format("http://{}:{}", host, port_);
}

asio::awaitable<void> HttpServer::AcceptLoop() {
  for (;;) {
    const auto strand = asio::make_strand(ioc_);  // the new connection's own
    auto [ec, socket] = co_await acceptor_.async_accept(strand, kTuple);
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec) {
      // e.g. EMFILE: the next accept may succeed once connections close; a pause keeps a
      // persistent error from spinning a core.
      asio::steady_timer pause(ioc_, std::chrono::milliseconds(20));
      co_await pause.async_wait(kTuple);
      continue;
    }
    if (connections_.load() >= options_.max_connections) {
      boost::system::error_code ignored;
      socket.close(ignored);
      continue;
    }
    const auto executor = socket.get_executor();
    asio::co_spawn(executor, Session(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> HttpServer::Session(tcp::socket socket) {
  ++connections_;
  if (options_.on_connection) options_.on_connection(+1);
  struct Closer {
    HttpServer* server;
    ~Closer() {
      --server->connections_;
      if (server->options_.on_connection) server->options_.on_connection(-1);
    }
  } closer{this};
  boost::system::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);  // small SSE events: no Nagle delay
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (bool first = true;; first = false) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(64 * 1024);
    parser.body_limit(static_cast<uint64_t>(options_.max_body_bytes));
    stream.expires_after(Ticks(first ? options_.header_timeout : options_.idle_timeout));
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, kTuple);
    if (ec == http::error::body_limit) {
      Request& partial = parser.get();
      partial.keep_alive(false);
      StringResponse res = too_large_(partial, options_.max_body_bytes);
      co_await WriteResponse(stream, partial, res);
      break;
    }
    if (ec) break;  // closed, timed out or not HTTP: nothing sensible to answer
    stream.expires_never();
    Request req = parser.release();
    const bool keep = co_await handler_(stream, req);
    if (!keep || !req.keep_alive()) break;
  }
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

asio::awaitable<bool> WriteResponse(beast::tcp_stream& stream, const Request& req,
                                    StringResponse& res) {
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  stream.expires_after(kClientWriteTimeout);
  auto [ec, n] = co_await http::async_write(stream, res, kTuple);
  stream.expires_never();
  co_return !ec;
}

}  // namespace gpuscale::net
