#include "gateway/gateway_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <cerrno>
#include <chrono>
#include <map>
#include <mutex>
#include <string_view>
#include <variant>

#include <fmt/format.h>

#include "gateway/openai_request.h"
#include "net/http_server.h"

namespace gpuscale::gateway {
namespace {

namespace asio = net::asio;
namespace beast = net::beast;
namespace http = net::http;
using net::kClientWriteTimeout;
using net::kTuple;
using net::Request;
using net::Ticks;
using tcp = net::tcp;
using asio::awaitable;
using namespace asio::experimental::awaitable_operators;
using SteadyTime = std::chrono::steady_clock::time_point;

constexpr size_t kRelayChunkBytes = 16 * 1024;

double SecondsSince(SteadyTime t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Hop-by-hop headers (RFC 9110 7.6.1) are not forwarded in either direction.
bool IsHopByHop(http::field f) {
  switch (f) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::proxy_authenticate:
    case http::field::proxy_authorization:
    case http::field::te:
    case http::field::trailer:
    case http::field::transfer_encoding:
    case http::field::upgrade:
    case http::field::host:
    case http::field::content_length:
      return true;
    default:
      return false;
  }
}

// What one forwarding attempt came to.
enum class Attempt {
  kRetryable,   // no response byte came from the replica: another replica may take it
  kRelayed,     // the response was relayed whole
  kBroken,      // the replica's stream broke after its first byte (client cut off)
  kClientGone,  // the client stopped reading or left
};

// A response the gateway writes itself (errors, /v1/models, /health).
struct Canned {
  http::status status = http::status::ok;
  std::string body;
  int retry_after_s = 0;  // > 0: a Retry-After header
};

// An OpenAI-shaped error response.
Canned ErrorReply(http::status status, std::string_view message, std::string_view type,
                  std::string_view param = {}, std::string_view code = {},
                  int retry_after_s = 0) {
  return {status, OpenAiErrorBody(message, type, param, code), retry_after_s};
}

// What a connected socket holds, without taking it: nothing yet, bytes, or the peer's close
// (or an error).
enum class PeekResult { kQuiet, kData, kClosed };

PeekResult Peek(int fd) {
  char byte;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return PeekResult::kData;
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? PeekResult::kQuiet
                                                            : PeekResult::kClosed;
}

// Idle kept-alive connections to replicas, by "host:port", so that a request does not pay a
// TCP connect (and the replica an accept) each time: connecting per request cost about
// 60 us of gateway CPU per short request and held it to 0.4x HAProxy's requests/s
// (scripts/gateway-bench). Connections are kept as bare descriptors and adopted by the
// taking coroutine's socket, so each use runs on its own connection's strand. A connection
// idle longer than kPooledIdle is closed (vLLM's server, uvicorn, closes idle ones after
// 5 s), one the replica closed is noticed on Take, and a reused one that fails before the
// replica's first byte is retried once on a fresh connection (Relay).
class UpstreamPool {
 public:
  static constexpr auto kPooledIdle = std::chrono::seconds(2);
  static constexpr size_t kMaxIdlePerReplica = 64;

  ~UpstreamPool() {
    for (auto& [key, idle] : idle_) {
      for (const Idle& c : idle) ::close(c.fd);
    }
  }

  // Moves an idle, still open connection to `key` into `socket` (closed); false when none.
  bool Take(const std::string& key, tcp::socket& socket) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = idle_.find(key);
    while (it != idle_.end() && !it->second.empty()) {
      const Idle c = it->second.back();
      it->second.pop_back();
      boost::system::error_code ec;
      if (Peek(c.fd) == PeekResult::kQuiet && now - c.since < kPooledIdle) {
        socket.assign(c.protocol, c.fd, ec);
        if (!ec) return true;
      }
      ::close(c.fd);  // closed by the replica, idle too long, or unexpected bytes
    }
    return false;
  }

  // Keeps `socket` (a connection whose last response was read whole) for the next request.
  void Give(const std::string& key, tcp::socket& socket) {
    boost::system::error_code ec;
    const tcp::endpoint local = socket.local_endpoint(ec);
    if (ec) return;
    const int fd = socket.release(ec);
    if (ec || fd < 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Idle>& idle = idle_[key];
    if (idle.size() >= kMaxIdlePerReplica) {
      ::close(fd);
      return;
    }
    idle.push_back({fd, local.protocol(), std::chrono::steady_clock::now()});
  }

 private:
  struct Idle {
    int fd;
    tcp::socket::protocol_type protocol;
    SteadyTime since;
  };
  std::mutex mu_;
  std::map<std::string, std::vector<Idle>> idle_;  // guarded by mu_; newest last
};

net::StringResponse CannedResponse(const Canned& reply) {
  net::StringResponse res{reply.status, 11};
  res.set(http::field::content_type, "application/json");
  if (reply.retry_after_s > 0) {
    res.set(http::field::retry_after, std::to_string(reply.retry_after_s));
  }
  if (reply.status == http::status::unauthorized) {
    res.set(http::field::www_authenticate, "Bearer");  // RFC 6750 3
  }
  res.body() = reply.body;
  return res;
}

// Coroutine bodies below pass only named values to co_await calls (net/http_server.h says
// why), so replies are built into locals first.

awaitable<boost::system::error_code> ReadHeader(beast::tcp_stream& upstream,
                                                beast::flat_buffer& buffer,
                                                http::response_parser<http::buffer_body>& parser) {
  auto [ec, n] = co_await http::async_read_header(upstream, buffer, parser, kTuple);
  co_return ec;
}

// Completes (true) when the client closes its side of the connection; never completes while
// it only waits or sends the next pipelined request. Cancelled by the `||` it runs in.
awaitable<bool> ClientGone(tcp::socket& client) {
  auto [ec] = co_await client.async_wait(tcp::socket::wait_read, kTuple);
  if (ec == asio::error::operation_aborted) co_return false;
  if (!ec) {
    if (Peek(client.native_handle()) != PeekResult::kClosed) {
      // Bytes of a next request: the client is there. Wait until cancelled.
      asio::steady_timer forever(co_await asio::this_coro::executor,
                                 asio::steady_timer::time_point::max());
      co_await forever.async_wait(kTuple);
      co_return false;
    }
  }
  co_return true;
}

}  // namespace

struct GatewayServer::Impl {
  explicit Impl(std::shared_ptr<GatewayState> s)
      : state(std::move(s)), config(state->config()) {}

  awaitable<bool> Handle(beast::tcp_stream& client, Request& req);
  std::optional<Canned> Route(const Request& req) const;
  awaitable<bool> Forward(beast::tcp_stream& client, Request& req, SteadyTime arrival);
  // Waits in the service's activator queue for a replica until `deadline`. nullopt with
  // `full` when the queue has no room, with `gone` when the client hung up meanwhile (its
  // place is given up then, so a woken service never receives a request nobody awaits).
  awaitable<std::optional<Ticket>> WaitForReplica(const std::string& service,
                                                  std::optional<uint64_t> key,
                                                  SteadyTime deadline, int client_fd,
                                                  bool& full, bool& gone);
  awaitable<Attempt> Relay(beast::tcp_stream& client, const Request& req, const Ticket& ticket,
                           SteadyTime arrival, RequestMeasurement& m, bool allow_pooled = true);
  awaitable<bool> Send(beast::tcp_stream& client, const Request& req, const Canned& reply);

  // Declared before server: sessions still pending when it is destroyed touch them.
  std::shared_ptr<GatewayState> state;
  const GatewayConfig& config;
  UpstreamPool pool;  // before server: outlives the coroutines that give back to it
  std::unique_ptr<net::HttpServer> server;
};

awaitable<bool> GatewayServer::Impl::Send(beast::tcp_stream& client, const Request& req,
                                          const Canned& reply) {
  net::StringResponse res = CannedResponse(reply);
  const bool sent = co_await net::WriteResponse(client, req, res);
  co_return sent;
}

// What the gateway answers itself; nullopt = forward the request to a replica.
std::optional<Canned> GatewayServer::Impl::Route(const Request& req) const {
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/health") return Canned{http::status::ok, "{}"};
  const auto authorization = req[http::field::authorization];
  if (!config.token.empty() &&
      !BearerMatches(std::string_view(authorization.data(), authorization.size()),
                     config.token)) {
    return ErrorReply(http::status::unauthorized,
                      "missing or wrong bearer token (Authorization: Bearer ...)",
                      "invalid_request_error", "", "invalid_api_key");
  }
  if (path == "/v1/models") {
    if (req.method() != http::verb::get) {
      return ErrorReply(http::status::method_not_allowed, "use GET /v1/models",
                        "invalid_request_error");
    }
    return Canned{http::status::ok, ModelListBody(state->Models())};
  }
  if (constexpr std::string_view kModel = "/v1/models/"; path.starts_with(kModel)) {
    // OpenAI's retrieve-model route; model names may contain '/' (org/name).
    const std::string model(path.substr(kModel.size()));
    if (req.method() != http::verb::get) {
      return ErrorReply(http::status::method_not_allowed, "use GET /v1/models/{model}",
                        "invalid_request_error");
    }
    if (const std::optional<std::string> service = state->ServiceOf(model)) {
      return Canned{http::status::ok, ModelBody(model, *service)};
    }
    return ErrorReply(http::status::not_found,
                      fmt::format("The model '{}' does not exist (GET /v1/models lists the "
                                  "served ones)",
                                  model),
                      "invalid_request_error", "model", "model_not_found");
  }
  if (IsInferencePath(path)) {
    if (req.method() == http::verb::post) return std::nullopt;
    return ErrorReply(http::status::method_not_allowed, fmt::format("use POST {}", path),
                      "invalid_request_error");
  }
  return ErrorReply(http::status::not_found,
                    fmt::format("no route {} (the gateway serves /v1/chat/completions, "
                                "/v1/completions, /v1/embeddings and /v1/models)",
                                path),
                    "invalid_request_error");
}

awaitable<bool> GatewayServer::Impl::Handle(beast::tcp_stream& client, Request& req) {
  const SteadyTime arrival = std::chrono::steady_clock::now();
  const std::optional<Canned> canned = Route(req);
  if (canned) {
    const bool sent = co_await Send(client, req, *canned);
    co_return sent;
  }
  const bool kept = co_await Forward(client, req, arrival);
  co_return kept;
}

awaitable<std::optional<Ticket>> GatewayServer::Impl::WaitForReplica(
    const std::string& service, std::optional<uint64_t> key, SteadyTime deadline, int client_fd,
    bool& full, bool& gone) {
  // The timer lives on this connection's strand: a wake posted from the daemon's thread runs
  // only while this coroutine is suspended, so it is never lost between Acquire and wait.
  auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
  const uint64_t id = state->NextWaiterId();
  auto wake = [timer] { asio::post(timer->get_executor(), [timer] { timer->cancel(); }); };
  if (!state->EnterQueue(service, id, wake)) {
    full = true;
    co_return std::nullopt;
  }
  struct Leave {
    GatewayState& state;
    const std::string& service;
    uint64_t id;
    ~Leave() { state.LeaveQueue(service, id); }
  } leave{*state, service, id};
  for (;;) {
    if (Peek(client_fd) == PeekResult::kClosed) {
      gone = true;
      co_return std::nullopt;
    }
    if (auto ticket = state->Acquire(service, key)) co_return ticket;
    if (std::chrono::steady_clock::now() >= deadline) co_return std::nullopt;
    // Also re-check every second, in case a replica became healthy again without a publish
    // (and to notice a client that hung up).
    timer->expires_at(std::min(deadline, std::chrono::steady_clock::now() +
                                             std::chrono::seconds(1)));
    co_await timer->async_wait(kTuple);
  }
}

awaitable<bool> GatewayServer::Impl::Forward(beast::tcp_stream& client, Request& req,
                                             SteadyTime arrival) {
  Result<InferenceRequest> parsed = ParseInferenceRequest(req.body(), config.prefix_chars);
  if (!parsed) {
    const Canned bad = ErrorReply(http::status::bad_request, parsed.error().message,
                                  "invalid_request_error", parsed.error().field);
    const bool sent = co_await Send(client, req, bad);
    co_return sent;
  }
  const std::optional<std::string> service = state->ServiceOf(parsed->model);
  if (!service) {
    const Canned unknown = ErrorReply(
        http::status::not_found,
        fmt::format("The model '{}' does not exist (GET /v1/models lists the served ones)",
                    parsed->model),
        "invalid_request_error", "model", "model_not_found");
    const bool sent = co_await Send(client, req, unknown);
    co_return sent;
  }
  const std::optional<uint64_t> key =
      config.picker.prefix_affinity ? std::optional(parsed->prefix_key) : std::nullopt;
  RequestMeasurement m;
  std::optional<Ticket> ticket = state->Acquire(*service, key);
  if (!ticket) {
    bool full = false;
    bool gone = false;
    const SteadyTime deadline = arrival + Ticks(config.queue_timeout);
    const int client_fd = client.socket().native_handle();
    ticket = co_await WaitForReplica(*service, key, deadline, client_fd, full, gone);
    m.queue_seconds = SecondsSince(arrival);
    if (!ticket && gone) {
      m.status = 0;
      m.error = "client_gone";
      m.e2e_seconds = SecondsSince(arrival);
      state->Record(*service, m);
      co_return false;  // nobody to answer
    }
    if (!ticket) {
      m.status = 503;
      m.error = full ? "queue_full" : "queue_timeout";
      m.e2e_seconds = SecondsSince(arrival);
      state->Record(*service, m);
      const std::string message =
          full ? fmt::format("service '{}' has no ready replica and {} requests already wait",
                             *service, config.queue_size)
               : fmt::format("service '{}' had no ready replica within {} s", *service,
                             config.queue_timeout.count());
      const Canned unavailable = ErrorReply(http::status::service_unavailable, message,
                                            "server_error", "", "no_ready_replica", 5);
      const bool sent = co_await Send(client, req, unavailable);
      co_return sent;
    }
  }
  // One retry on another replica when the first attempt got no response byte.
  std::set<std::string> tried;
  for (int attempt = 0;; ++attempt) {
    const Attempt result = co_await Relay(client, req, *ticket, arrival, m);
    const AttemptOutcome outcome = result == Attempt::kRetryable ? AttemptOutcome::kTransportFailure
                                   : result == Attempt::kRelayed ? AttemptOutcome::kOk
                                                                 : AttemptOutcome::kAbandoned;
    state->Release(*ticket, outcome);
    if (result != Attempt::kRetryable) {
      m.e2e_seconds = SecondsSince(arrival);
      state->Record(*service, m);
      co_return result == Attempt::kRelayed;
    }
    tried.insert(ticket->replica);
    if (attempt == 1 || !(ticket = state->Acquire(*service, key, tried))) break;
  }
  m.status = 502;
  m.error = "upstream_unreachable";
  m.e2e_seconds = SecondsSince(arrival);
  state->Record(*service, m);
  const Canned unreachable =
      ErrorReply(http::status::bad_gateway,
                 fmt::format("no replica of service '{}' answered", *service), "server_error",
                 "", "upstream_unreachable", 1);
  const bool sent = co_await Send(client, req, unreachable);
  co_return sent;
}

awaitable<Attempt> GatewayServer::Impl::Relay(beast::tcp_stream& client, const Request& req,
                                              const Ticket& ticket, SteadyTime arrival,
                                              RequestMeasurement& m, bool allow_pooled) {
  auto executor = co_await asio::this_coro::executor;
  const std::string port = std::to_string(ticket.port);
  const std::string pool_key = ticket.host + ":" + port;
  beast::tcp_stream upstream(executor);
  const bool reused = allow_pooled && pool.Take(pool_key, upstream.socket());
  if (!reused) {
    tcp::resolver resolver(executor);
    auto [rec, endpoints] = co_await resolver.async_resolve(ticket.host, port, kTuple);
    if (rec) co_return Attempt::kRetryable;
    upstream.expires_after(Ticks(config.connect_timeout));
    auto [cec, ep] = co_await upstream.async_connect(endpoints, kTuple);
    if (cec) co_return Attempt::kRetryable;
    state->UpstreamConnected();
  }
  boost::system::error_code ignored;
  upstream.socket().set_option(tcp::no_delay(true), ignored);

  Request forward{req.method(), req.target(), 11};
  for (const auto& field : req) {
    if (IsHopByHop(field.name())) continue;
    // The gateway's own token is for the gateway; a replica's key, if any, is the caller's.
    if (!config.token.empty() && field.name() == http::field::authorization) continue;
    forward.insert(field.name_string(), field.value());
  }
  // An IPv6 literal goes in brackets (RFC 9110 7.2: Host is uri-host [":" port]).
  const bool ipv6 = ticket.host.find(':') != std::string::npos;
  const std::string host_header =
      ipv6 ? "[" + ticket.host + "]:" + port : ticket.host + ":" + port;
  forward.set(http::field::host, host_header);
  forward.keep_alive(true);  // the connection goes back to the pool when the answer is whole
  forward.body() = req.body();  // the client's bytes, not re-serialized
  forward.prepare_payload();
  upstream.expires_after(Ticks(config.upstream_timeout));
  auto [wec, wn] = co_await http::async_write(upstream, forward, kTuple);
  if (wec && reused) {
    // The replica closed the idle connection as we took it: a fresh one, same replica.
    const Attempt fresh = co_await Relay(client, req, ticket, arrival, m, false);
    co_return fresh;
  }
  if (wec) co_return Attempt::kRetryable;

  beast::flat_buffer upstream_buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<uint64_t>::max());
  // A non-streaming request has no response byte until the replica is done; meanwhile a
  // client that hangs up cancels the work at the replica (its connection closes).
  auto header = ReadHeader(upstream, upstream_buffer, parser);
  auto gone = ClientGone(client.socket());
  auto first = std::move(header) || std::move(gone);
  const std::variant<boost::system::error_code, bool> waited = co_await std::move(first);
  if (waited.index() == 1) {
    m.error = "client_gone";
    m.status = 0;
    co_return Attempt::kClientGone;
  }
  if (std::get<0>(waited) && reused) {
    const Attempt fresh = co_await Relay(client, req, ticket, arrival, m, false);
    co_return fresh;
  }
  if (std::get<0>(waited)) co_return Attempt::kRetryable;

  // The replica answered: from here on a failure reaches the client.
  m.replica = ticket.replica;
  auto& res = parser.get();
  m.status = res.result_int();
  const bool length_known = parser.content_length().has_value();
  for (auto it = res.begin(); it != res.end();) {
    it = IsHopByHop(it->name()) && it->name() != http::field::content_length ? res.erase(it)
                                                                             : std::next(it);
  }
  if (!length_known) res.chunked(true);
  res.keep_alive(req.keep_alive());
  http::response_serializer<http::buffer_body> serializer{res};
  std::array<char, kRelayChunkBytes> buf;
  SseClock sse;
  // async_read_some returns as soon as the parser made progress, so each SSE chunk is
  // written on as it comes (async_read would wait to fill the buffer).
  while (!serializer.is_done()) {
    if (!parser.is_done()) {
      res.body().data = buf.data();
      res.body().size = buf.size();
      upstream.expires_after(Ticks(config.upstream_timeout));
      auto [ec, n] = co_await http::async_read_some(upstream, upstream_buffer, parser, kTuple);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {
        m.error = "upstream_broken";
        co_return Attempt::kBroken;  // the client connection closes: a truncated response
      }
      const size_t got = buf.size() - res.body().size;
      if (got == 0 && !parser.is_done()) continue;  // framing only (a chunk header)
      if (got > 0 && !m.ttft_seconds) m.ttft_seconds = SecondsSince(arrival);
      sse.Observe(std::string_view(buf.data(), got), SecondsSince(arrival));
      res.body().size = got;
      res.body().data = got > 0 ? buf.data() : nullptr;
      res.body().more = !parser.is_done();
    } else {
      res.body().data = nullptr;
      res.body().size = 0;
      res.body().more = false;
    }
    client.expires_after(kClientWriteTimeout);
    auto [ec, n] = co_await http::async_write(client, serializer, kTuple);
    client.expires_never();
    if (ec == http::error::need_buffer) ec = {};
    if (ec) {
      m.error = "client_gone";
      m.status = 0;
      co_return Attempt::kClientGone;  // `upstream` closes here: the replica stops the work
    }
  }
  m.tpot_seconds = sse.MeanGapSeconds();
  if (m.status >= 500) m.error = "upstream_5xx";
  if (parser.is_done() && parser.keep_alive()) {
    upstream.expires_never();
    pool.Give(pool_key, upstream.socket());
  }
  co_return Attempt::kRelayed;
}

GatewayServer::GatewayServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GatewayServer::~GatewayServer() { Stop(); }

Result<std::unique_ptr<GatewayServer>> GatewayServer::Start(std::shared_ptr<GatewayState> state) {
  auto impl = std::make_unique<Impl>(std::move(state));
  const GatewayConfig& config = impl->config;
  net::HttpServerOptions options;
  options.host = config.host;
  options.port = config.port;
  options.field = "gateway.listen";
  options.threads = config.threads;
  options.max_connections = config.max_connections;
  options.max_body_bytes = config.max_body_bytes;
  options.header_timeout = config.header_timeout;
  options.idle_timeout = config.idle_timeout;
  options.on_connection = [state = impl->state](int delta) {
    delta > 0 ? state->ConnectionOpened() : state->ConnectionClosed();
  };
  Impl* raw = impl.get();
  auto handler = [raw](beast::tcp_stream& client, Request& req) { return raw->Handle(client, req); };
  auto reject = [](const Request&, http::status status, const std::string& message) {
    return CannedResponse(ErrorReply(status, message, "invalid_request_error"));
  };
  GS_ASSIGN_OR_RETURN(impl->server,
                      net::HttpServer::Start(std::move(options), handler, reject));
  return std::unique_ptr<GatewayServer>(new GatewayServer(std::move(impl)));
}

void GatewayServer::Stop() {
  if (impl_ && impl_->server) impl_->server->Stop();
}

int GatewayServer::port() const { return impl_->server->port(); }

std::string GatewayServer::url() const { return impl_->server->url(); }

}  // namespace gpuscale::gateway
