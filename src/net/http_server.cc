#include "net/http_server.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <iterator>
#include <utility>

namespace gpuscale::net {
namespace {

int CountFields(const Request& header) {
  return static_cast<int>(std::distance(header.begin(), header.end()));
}

// RFC 9112 6.1/6.3 (see the header): the refusal for a request's Transfer-Encoding, if any.
std::optional<std::pair<http::status, std::string>> TransferCodingProblem(const Request& header) {
  std::vector<std::string> codings;
  bool present = false;
  const auto [first, last] = header.equal_range(http::field::transfer_encoding);
  for (auto field = first; field != last; ++field) {
    present = true;
    const std::string_view value(field->value().data(), field->value().size());
    for (size_t start = 0; start <= value.size();) {
      size_t end = value.find(',', start);
      if (end == std::string_view::npos) end = value.size();
      std::string_view token = value.substr(start, end - start);
      while (!token.empty() && (token.front() == ' ' || token.front() == '\t'))
        token.remove_prefix(1);
      while (!token.empty() && (token.back() == ' ' || token.back() == '\t'))
        token.remove_suffix(1);
      if (!token.empty()) {
        std::string lower(token);
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        codings.push_back(std::move(lower));
      }
      start = end + 1;
    }
  }
  if (!present) return std::nullopt;
  if (header.version() < 11) {
    return std::pair{http::status::bad_request,
                     std::string("Transfer-Encoding in an HTTP/1.0 request (RFC 9112 6.1)")};
  }
  if (codings.empty() || codings.back() != "chunked") {
    return std::pair{http::status::bad_request,
                     fmt::format("Transfer-Encoding '{}' does not end in chunked, so the body's "
                                 "length is unknown (RFC 9112 6.3)",
                                 header[http::field::transfer_encoding])};
  }
  if (codings.size() > 1) {
    return std::pair{http::status::not_implemented,
                     fmt::format("transfer coding '{}' is not supported; send the body chunked "
                                 "alone or with Content-Length",
                                 codings.front())};
  }
  return std::nullopt;
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
      table_(options_.max_connections, options_.max_connections_per_client),
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
    boost::system::error_code peer_ec;
    const tcp::endpoint peer = socket.remote_endpoint(peer_ec);
    ConnectionTable::Admission admission =
        table_.Admit(peer_ec ? std::string("?") : peer.address().to_string());
    if (admission.evict) admission.evict();
    if (!admission.admitted) {
      boost::system::error_code ignored;
      socket.close(ignored);
      continue;
    }
    const auto executor = socket.get_executor();
    asio::co_spawn(executor, Session(std::move(socket), admission.id), asio::detached);
  }
}

asio::awaitable<void> HttpServer::Session(tcp::socket socket, ConnectionTable::Id id) {
  ++connections_;
  if (options_.on_connection) options_.on_connection(+1);
  struct Closer {
    HttpServer* server;
    ConnectionTable::Id id;
    ~Closer() {
      server->table_.Remove(id);
      --server->connections_;
      if (server->options_.on_connection) server->options_.on_connection(-1);
    }
  } closer{this, id};
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
    // While it waits for a header the connection may be displaced by a newcomer
    // (connection_table.h). The close runs on this connection's thread, and the table
    // forgets it (Active or Remove) on this thread too, before `stream` is gone.
    table_.Waiting(id, [this, id, &stream, executor = stream.get_executor()] {
      asio::post(executor, [this, id, &stream] {
        if (!table_.Displaced(id)) return;  // ended meanwhile: `stream` may be gone
        boost::system::error_code ignored;
        stream.socket().close(ignored);
      });
    });
    auto [hec, hn] = co_await http::async_read_header(stream, buffer, parser, kTuple);
    if (!table_.Active(id)) break;  // displaced while it waited
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
  if (auto problem = TransferCodingProblem(header)) {
    return reject_(header, problem->first, problem->second);
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

PeekResult Peek(int fd) {
  char byte;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return PeekResult::kData;
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? PeekResult::kQuiet
                                                            : PeekResult::kClosed;
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
