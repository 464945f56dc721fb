#include "net/http_server.h"

#include <fmt/format.h>

#include <array>
#include <iterator>

namespace gpuscale::net {
namespace {

int CountFields(const Request& header) {
  return static_cast<int>(std::distance(header.begin(), header.end()));
}

bool ExpectsContinue(const Request& header) {
  return beast::iequals(header[http::field::expect], "100-continue");
}

// After a refusal sent before the request's body was read: closing a socket with unread
// bytes makes the kernel send a reset, which can destroy the refusal before the client reads
// it. So stop sending, and read and discard what the client still sends for a short while.
asio::awaitable<void> Linger(beast::tcp_stream& stream) {
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream.expires_after(std::chrono::seconds(1));
  std::array<char, 16 * 1024> sink;
  for (size_t drained = 0; drained < (4u << 20);) {
    auto [ec, n] = co_await stream.async_read_some(asio::buffer(sink), kTuple);
    if (ec) break;
    drained += n;
  }
  stream.expires_never();
}

}  // namespace

namespace {

std::vector<std::unique_ptr<asio::io_context>> MakeContexts(int threads) {
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  // Hint 1: each context is run by one thread (posts from other threads stay safe).
  for (int i = 0; i < std::max(1, threads); ++i) {
    contexts.push_back(std::make_unique<asio::io_context>(1));
  }
  return contexts;
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, Handler handler, RejectReply reject)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      reject_(std::move(reject)),
      contexts_(MakeContexts(options_.threads)),
      acceptor_(*contexts_[0]) {}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options, Handler handler,
                                                      RejectReply reject) {
  std::unique_ptr<HttpServer> server(
      new HttpServer(std::move(options), std::move(handler), std::move(reject)));
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
  asio::co_spawn(*server->contexts_[0], server->AcceptLoop(), asio::detached);
  for (const auto& context : server->contexts_) {
    // Work guard: a context with no connection yet must not return from run().
    server->threads_.emplace_back([io = context.get()] {
      auto guard = asio::make_work_guard(*io);
      io->run();
    });
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
  for (const auto& context : contexts_) context->stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

std::string HttpServer::url() const {
  const std::string& host = options_.host;
  return host.find(':') != std::string::npos ? fmt::format("http://[{}]:{}", host, port_)
                                             : fmt::format("http://{}:{}", host, port_);
}

asio::io_context& HttpServer::NextContext() {
  return *contexts_[next_context_.fetch_add(1, std::memory_order_relaxed) % contexts_.size()];
}

asio::awaitable<void> HttpServer::AcceptLoop() {
  for (;;) {
    asio::io_context& home = NextContext();  // the new connection's thread
    auto [ec, socket] = co_await acceptor_.async_accept(home, kTuple);
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec) {
      // e.g. EMFILE: the next accept may succeed once connections close; a pause keeps a
      // persistent error from spinning a core.
      asio::steady_timer pause(*contexts_[0], std::chrono::milliseconds(20));
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
    parser.header_limit(options_.max_header_bytes);
    parser.body_limit(static_cast<uint64_t>(options_.max_body_bytes));
    // One deadline for the whole request, header and body: a client that trickles bytes
    // cannot stretch it (a per-read timeout would restart at every byte).
    stream.expires_after(Ticks(first ? options_.header_timeout : options_.idle_timeout));
    auto [hec, hn] = co_await http::async_read_header(stream, buffer, parser, kTuple);
    boost::system::error_code failure = hec;
    std::optional<StringResponse> refusal;
    if (!failure) refusal = Screen(parser.get());
    if (!failure && !refusal && !parser.is_done()) {
      if (ExpectsContinue(parser.get())) {
        http::response<http::empty_body> go_on{http::status::continue_, parser.get().version()};
        auto [cec, cn] = co_await http::async_write(stream, go_on, kTuple);
        if (cec) break;
      }
      auto [bec, bn] = co_await http::async_read(stream, buffer, parser, kTuple);
      failure = bec;
    }
    if (failure) refusal = Refusal(parser.get(), failure);
    if (failure || refusal) {
      if (!refusal) break;  // closed, reset or timed out: no one to answer
      Request& partial = parser.get();
      partial.keep_alive(false);
      co_await WriteResponse(stream, partial, *refusal);
      if (!parser.is_done()) co_await Linger(stream);
      break;
    }
    stream.expires_never();
    Request req = parser.release();
    const bool keep = co_await handler_(stream, req);
    if (!keep || !req.keep_alive()) break;
  }
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

std::optional<StringResponse> HttpServer::Screen(const Request& header) const {
  if (CountFields(header) > options_.max_header_fields) {
    return reject_(header, http::status::request_header_fields_too_large,
                   fmt::format("more than {} header fields", options_.max_header_fields));
  }
  return options_.gate ? options_.gate(header) : std::nullopt;
}

std::optional<StringResponse> HttpServer::Refusal(const Request& partial,
                                                  const boost::system::error_code& ec) const {
  if (ec == http::error::body_limit) {
    return reject_(partial, http::status::payload_too_large,
                   fmt::format("request body over {} bytes", options_.max_body_bytes));
  }
  if (ec == http::error::header_limit) {
    return reject_(partial, http::status::request_header_fields_too_large,
                   fmt::format("request header over {} bytes", options_.max_header_bytes));
  }
  // The parser's own errors (a bad request line, a bad chunk size...) mean the client sent
  // something that is not HTTP; the stream's (closed, reset, timed out) leave no one to tell.
  const bool closed = ec == http::error::end_of_stream || ec == http::error::partial_message;
  if (ec.category() == http::make_error_code(http::error::bad_target).category() && !closed) {
    return reject_(partial, http::status::bad_request,
                   fmt::format("malformed HTTP request: {}", ec.message()));
  }
  return std::nullopt;
}

asio::awaitable<bool> WriteResponse(beast::tcp_stream& stream, const Request& req,
                                    StringResponse& res) {
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  // HEAD: the headers a GET would get, Content-Length included, and no body.
  if (req.method() == http::verb::head) res.body().clear();
  stream.expires_after(kClientWriteTimeout);
  auto [ec, n] = co_await http::async_write(stream, res, kTuple);
  stream.expires_never();
  co_return !ec;
}

}  // namespace gpuscale::net
