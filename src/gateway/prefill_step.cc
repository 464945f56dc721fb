#include "gateway/prefill_step.h"

#include <fmt/format.h>

#include <array>
#include <set>
#include <utility>

#include "gateway/disagg_request.h"
#include "gateway/openai_request.h"
#include "gateway/relay_framing.h"

namespace gpuscale::gateway {
namespace {

namespace asio = net::asio;
namespace beast = net::beast;
namespace http = net::http;
using asio::awaitable;
using net::kTuple;
using net::Ticks;
using tcp = net::tcp;

// A prefill answer is one token and a handle; anything far larger is not one.
constexpr uint64_t kMaxPrefillResponseBytes = 8 << 20;

// What one replica answered; nullopt when it gave no response (a transport failure).
struct Answer {
  int status = 0;
  std::string body;
};

// One buffered exchange with `ticket`'s replica, with the gateway's connect and upstream
// timeouts on each operation (a short exchange: the relay's per-thread watch is for streams),
// on a kept-alive connection from `pool` when there is one; one the replica had closed is
// retried once on a fresh connection, as the relay does.
awaitable<std::optional<Answer>> Exchange(GatewayState& state, UpstreamPool& pool,
                                          const net::Request& prefill, const Ticket& ticket,
                                          bool allow_pooled = true) {
  const GatewayConfig& config = state.config();
  auto executor = co_await asio::this_coro::executor;
  const std::string port = std::to_string(ticket.port);
  const std::string pool_key = ticket.host + ":" + port;
  std::optional<tcp::socket> pooled;
  if (allow_pooled) pooled = pool.Take(pool_key);
  const bool reused = pooled.has_value();
  beast::tcp_stream upstream =
      reused ? beast::tcp_stream(std::move(*pooled)) : beast::tcp_stream(executor);
  if (!reused) {
    // Not a coroutine shared with the relay: see gateway_server.cc's Relay.
    tcp::resolver resolver(executor);
    auto [rec, endpoints] = co_await resolver.async_resolve(ticket.host, port, kTuple);
    if (rec) co_return std::nullopt;
    upstream.expires_after(Ticks(config.connect_timeout));
    auto [cec, ep] = co_await upstream.async_connect(endpoints, kTuple);
    if (cec) co_return std::nullopt;
    boost::system::error_code ignored;
    upstream.socket().set_option(tcp::no_delay(true), ignored);
    state.UpstreamConnected();
  }
  const std::string head = RequestHead(prefill, ticket.host, port, !config.token.empty());
  const std::array<asio::const_buffer, 2> request{asio::buffer(head), asio::buffer(prefill.body())};
  upstream.expires_after(Ticks(config.upstream_timeout));
  boost::system::error_code wec;
  const size_t sent_now = SendNow(upstream.socket(), request, wec);
  if (!wec && sent_now < asio::buffer_size(request)) {
    beast::buffers_suffix<std::array<asio::const_buffer, 2>> rest(request);
    rest.consume(sent_now);
    auto [rest_ec, rest_n] = co_await asio::async_write(upstream, rest, kTuple);
    wec = rest_ec;
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxPrefillResponseBytes);
  boost::system::error_code ec = wec;
  if (!ec) {
    auto [rec, n] = co_await http::async_read(upstream, buffer, parser, kTuple);
    ec = rec;
  }
  if (ec && reused) {
    std::optional<Answer> fresh = co_await Exchange(state, pool, prefill, ticket, false);
    co_return fresh;
  }
  if (ec) co_return std::nullopt;
  upstream.expires_never();
  if (parser.keep_alive()) pool.Give(pool_key, upstream.release_socket());
  co_return Answer{static_cast<int>(parser.get().result_int()), std::move(parser.get().body())};
}

PrefillStepResult Failure(int status, std::string body, RequestMeasurement& m, std::string error) {
  m.error = std::move(error);
  return {.ok = false, .status = status, .body = std::move(body)};
}

// The step's result once a prefill replica answered.
PrefillStepResult FromAnswer(const net::Request& req, const Ticket& ticket, Answer answer,
                             RequestMeasurement& m) {
  if (answer.status != 200) {
    m.replica = ticket.replica;
    return Failure(answer.status, std::move(answer.body), m, "prefill_status");
  }
  Result<std::string> decode = DecodeRequestBody(req.body(), answer.body);
  if (!decode) {
    return Failure(502,
                   OpenAiErrorBody(fmt::format("prefill replica '{}': {}", ticket.replica,
                                               decode.error().ToString()),
                                   "server_error", "", "prefill_no_handle"),
                   m, "prefill_no_handle");
  }
  return {.ok = true, .decode_body = std::move(*decode)};
}

}  // namespace

awaitable<PrefillStepResult> RunPrefillStep(GatewayState& state, UpstreamPool& pool,
                                            const net::Request& req, const std::string& service,
                                            RouteKey prefix_key, Ticket ticket,
                                            RequestMeasurement& m) {
  Result<std::string> body = PrefillRequestBody(req.body());
  if (!body) {
    state.Release(ticket, AttemptOutcome::kOk);  // never sent: not the replica's fault
    co_return Failure(
        400, OpenAiErrorBody(body.error().message, "invalid_request_error", body.error().field, ""),
        m, "bad_request");
  }
  net::Request prefill = req;
  prefill.body() = std::move(*body);
  std::set<std::string> tried;
  for (int attempt = 0;; ++attempt) {
    std::optional<Answer> answer = co_await Exchange(state, pool, prefill, ticket);
    if (answer) {
      PrefillStepResult result = FromAnswer(req, ticket, std::move(*answer), m);
      if (result.ok) {
        result.held = ticket;  // the decode step pulls the KV from it: the caller releases it
      } else {
        state.Release(ticket, AttemptOutcome::kOk);
      }
      co_return result;
    }
    state.Release(ticket, AttemptOutcome::kTransportFailure);
    tried.insert(ticket.replica);
    if (attempt == 1) break;
    std::optional<Ticket> next =
        state.Acquire(service, prefix_key, tried, RoutePool::kPrefill, ticket.priority);
    if (!next) break;
    ticket = std::move(*next);
  }
  co_return Failure(
      502,
      OpenAiErrorBody(fmt::format("no prefill replica of service '{}' answered", service),
                      "server_error", "", "upstream_unreachable"),
      m, "prefill_unreachable");
}

}  // namespace gpuscale::gateway
