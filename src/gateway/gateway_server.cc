#include "gateway/gateway_server.h"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cmath>
#include <optional>
#include <set>
#include <string_view>

#include "gateway/door_admission.h"
#include "gateway/health_checker.h"
#include "gateway/kv_event_subscriber.h"
#include "gateway/openai_request.h"
#include "gateway/prefill_step.h"
#include "gateway/relay_framing.h"
#include "gateway/relay_threads.h"
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
using SteadyTime = std::chrono::steady_clock::time_point;

constexpr size_t kRelayChunkBytes = 16 * 1024;

double SecondsSince(SteadyTime t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// What one forwarding attempt came to.
enum class Attempt {
  kRetryable,     // no response byte came from the replica: another replica may take it
  kRelayed,       // the response was relayed whole
  kRelayedClose,  // ... and framed by closing the client's connection (an HTTP/1.0 client)
  kBroken,        // the replica's stream broke after its first byte (client cut off)
  kClientGone,    // the client stopped reading or left
};

AttemptOutcome OutcomeOf(Attempt a) {
  switch (a) {
    case Attempt::kRetryable:
      return AttemptOutcome::kTransportFailure;
    case Attempt::kRelayed:
    case Attempt::kRelayedClose:
      return AttemptOutcome::kOk;
    case Attempt::kBroken:
    case Attempt::kClientGone:
      return AttemptOutcome::kAbandoned;
  }
  return AttemptOutcome::kAbandoned;
}

// A response the gateway writes itself (errors, /v1/models, /health).
struct Canned {
  http::status status = http::status::ok;
  std::string body;
  int retry_after_s = 0;  // > 0: a Retry-After header
  std::string_view content_type = "application/json";
  std::string_view allow = {};  // non-empty: an Allow header (a 405 must have one, RFC 9110)
  std::vector<std::pair<std::string, std::string>> headers = {};  // more (x-ratelimit-*)
};

// An OpenAI-shaped error response.
Canned ErrorReply(http::status status, std::string_view message, std::string_view type,
                  std::string_view param = {}, std::string_view code = {},
                  int retry_after_s = 0) {
  return {status, OpenAiErrorBody(message, type, param, code), retry_after_s};
}

net::StringResponse CannedResponse(const Canned& reply) {
  net::StringResponse res{reply.status, 11};
  res.set(http::field::content_type, reply.content_type);
  if (reply.retry_after_s > 0) {
    res.set(http::field::retry_after, std::to_string(reply.retry_after_s));
  }
  if (!reply.allow.empty()) res.set(http::field::allow, reply.allow);
  for (const auto& [name, value] : reply.headers) res.set(name, value);
  if (reply.status == http::status::unauthorized) {
    res.set(http::field::www_authenticate, "Bearer");  // RFC 6750 3
  }
  res.body() = reply.body;
  return res;
}

// 429 for a sheddable request refused because its service is saturated: Retry-After is the
// wait it was expected to have (at least a second).
Canned ShedReply(const std::string& service, const route::Admission& admission, Seconds max_wait) {
  const std::string message =
      admission.verdict == route::AdmissionVerdict::kShed
          ? fmt::format(
                "service '{}' is overloaded: this sheddable request would wait about "
                "{:.1f} s for a replica (at most {} s); retry later or send it with a "
                "higher priority",
                service, admission.expected_wait_seconds, max_wait.count())
          : fmt::format(
                "service '{}' is overloaded: this sheddable request waited {} s for a "
                "replica; retry later or send it with a higher priority",
                service, max_wait.count());
  const double retry = std::max(1.0, std::ceil(admission.expected_wait_seconds));
  return ErrorReply(http::status::too_many_requests, message, "server_error", "", "request_shed",
                    static_cast<int>(std::min(retry, 3600.0)));
}

// 405 for a route that serves only `allow` (the Allow header's value).
Canned MethodNotAllowed(std::string_view allow, std::string_view message) {
  Canned reply = ErrorReply(http::status::method_not_allowed, message, "invalid_request_error");
  reply.allow = allow;
  return reply;
}

// Coroutine bodies below pass only named values to co_await calls (net/http_server.h says
// why), so replies are built into locals first.

}  // namespace

struct GatewayServer::Impl {
  explicit Impl(std::shared_ptr<GatewayState> s)
      : state(std::move(s)),
        config(state->config()),
        threads(static_cast<size_t>(
            std::max(1, config.max_idle_upstream / std::max(1, config.threads)))) {}

  awaitable<bool> Handle(beast::tcp_stream& client, Request& req);
  std::optional<Canned> Route(const Request& req) const;
  awaitable<bool> Forward(beast::tcp_stream& client, Request& req, SteadyTime arrival);
  // Waits in the service's activator queue for a replica until `deadline`. nullopt with
  // `full` when the queue has no room, with `gone` when the client hung up meanwhile (its
  // place is given up then, so a woken service never receives a request nobody awaits).
  // `admission` says whether it was queued (or refused: full, shed).
  awaitable<std::optional<Ticket>> WaitForReplica(const std::string& service, WaitRequest wait,
                                                  SteadyTime deadline, int client_fd,
                                                  route::Admission& admission, bool& gone);
  // The request's priority, tenant and expected tokens (`door`), or the answer that refuses
  // it: 400 for a priority header that names none, 429 with x-ratelimit-* headers for a
  // tenant past its tokens per minute (recorded).
  std::optional<Canned> AdmitAtDoor(const Request& req, const InferenceRequest& parsed,
                                    const std::string& service, SteadyTime arrival,
                                    DoorAdmission& door, RequestMeasurement& m);
  // A replica of `service`'s `pool` for the request, from the activator queue when none is
  // ready. nullopt when the request ended there (recorded; answered 503 unless the client
  // left): `kept` then says whether the client connection stays open.
  // A sheddable request (`door`) that would wait past admission.sheddable_max_wait is
  // answered 429 (recorded as error `shed`).
  awaitable<std::optional<Ticket>> Place(beast::tcp_stream& client, const Request& req,
                                         const std::string& service, RouteKey key, RoutePool pool,
                                         const DoorAdmission& door, SteadyTime arrival,
                                         RequestMeasurement& m, bool& kept);
  // A disaggregated service's prefill step (prefill_step.h) on `ticket`: the request for the
  // decode step, or nullopt when the request ended (recorded, answered; `kept` as Place's).
  // On success the prefill replica's ticket goes to `hold`.
  awaitable<std::optional<Request>> Prefill(beast::tcp_stream& client, const Request& req,
                                            const std::string& service, RouteKey key,
                                            const Ticket& ticket, SteadyTime arrival,
                                            RequestMeasurement& m, bool& kept, HeldTicket& hold);
  // `hold` (a disaggregated request's prefill ticket) is released at the first response body
  // byte: the decode replica has the KV by then.
  awaitable<Attempt> Relay(beast::tcp_stream& client, const Request& req, const Ticket& ticket,
                           SteadyTime arrival, RequestMeasurement& m, HeldTicket* hold,
                           bool allow_pooled = true);
  awaitable<bool> Send(beast::tcp_stream& client, const Request& req, const Canned& reply);
  // Ends a response whose replica stopped mid-way (`why`, `code`): before any byte reached
  // the client, an OpenAI error response (`status`); in an event stream, an error event in
  // OpenAI's shape and `[DONE]`, then the stream's end, so that a client sees why instead of
  // a truncated body; otherwise the body stays truncated. The connection closes after.
  awaitable<void> EndCut(beast::tcp_stream& client, const Request& req, bool head_sent,
                         const ResponseFraming& framing, bool event_stream, http::status status,
                         const std::string& why, std::string_view code);
  // 503 for a service whose replicas cannot start (`reason`, ServiceRoute::unavailable_reason),
  // recorded as error `cannot_start`; whether the connection stays open.
  awaitable<bool> SendCannotStart(beast::tcp_stream& client, const Request& req,
                                  const std::string& service, const std::string& reason,
                                  SteadyTime arrival, RequestMeasurement& m);

  // Declared before server: sessions still pending when it is destroyed touch them.
  std::shared_ptr<GatewayState> state;
  const GatewayConfig& config;
  RelayThreads threads;  // Stop closes their pooled connections before server is destroyed
  std::unique_ptr<net::HttpServer> server;
  std::unique_ptr<HealthChecker> checker;  // after server: stopped before its io_contexts go
  // Precise prefix-cache routing: the replicas' KV events into state's index. After state,
  // whose sink it calls.
  std::unique_ptr<KvEventSubscriber> kv_subscriber;
};

awaitable<void> GatewayServer::Impl::EndCut(beast::tcp_stream& client, const Request& req,
                                            bool head_sent, const ResponseFraming& framing,
                                            bool event_stream, http::status status,
                                            const std::string& why, std::string_view code) {
  if (!head_sent) {
    Request closing{req.method(), req.target(), req.version()};  // the head WriteResponse reads
    closing.keep_alive(false);
    const Canned error = ErrorReply(status, why, "server_error", "", code, 1);
    co_await Send(client, closing, error);
    co_return;
  }
  if (!event_stream || framing.content_length) co_return;  // truncated: nothing can be added
  // vLLM's and OpenAI's shape for an error inside a stream; the openai clients raise it.
  const std::string events =
      fmt::format("data: {}\n\ndata: [DONE]\n\n", OpenAiErrorBody(why, "server_error", "", code));
  ChunkWriter out;
  out.AddBody(events, framing.chunked, /*last=*/true);
  client.expires_after(kClientWriteTimeout);
  // The connection closes after this write, whether it went or not.
  [[maybe_unused]] auto written = co_await asio::async_write(client, out.buffers(), kTuple);
  client.expires_never();
}

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
  if (path == "/metrics") {
    // The gateway's own families, so that `gpuscale gateway` on its own can be scraped
    // (under `gpuscale serve` the API's /metrics carries them too).
    if (req.method() != http::verb::get) {
      return MethodNotAllowed("GET", "use GET /metrics");
    }
    return Canned{http::status::ok, state->MetricsText(), 0,
                  "text/plain; version=0.0.4; charset=utf-8"};
  }
  if (path == "/v1/models") {
    if (req.method() != http::verb::get) {
      return MethodNotAllowed("GET", "use GET /v1/models");
    }
    return Canned{http::status::ok, ModelListBody(state->Models())};
  }
  if (constexpr std::string_view kModel = "/v1/models/"; path.starts_with(kModel)) {
    // OpenAI's retrieve-model route; model names may contain '/' (org/name).
    const std::string model(path.substr(kModel.size()));
    if (req.method() != http::verb::get) {
      return MethodNotAllowed("GET", "use GET /v1/models/{model}");
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
    return MethodNotAllowed("POST", fmt::format("use POST {}", path));
  }
  return ErrorReply(http::status::not_found,
                    fmt::format("no route {} (the gateway serves /v1/chat/completions, "
                                "/v1/completions, /v1/embeddings, /v1/models and /metrics)",
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
    const std::string& service, WaitRequest wait, SteadyTime deadline, int client_fd,
    route::Admission& admission, bool& gone) {
  // The timer lives on this connection's I/O thread: a wake posted from the daemon's thread runs
  // only while this coroutine is suspended, so it is never lost between Acquire and wait.
  auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
  const uint64_t id = state->NextWaiterId();
  wait.id = id;
  auto wake = [timer] { asio::post(timer->get_executor(), [timer] { timer->cancel(); }); };
  admission = state->EnterQueue(service, wait, wake);
  if (admission.verdict != route::AdmissionVerdict::kQueued) co_return std::nullopt;
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
    // Granted by a Release, a Publish or a health check, in the queue's order.
    if (auto ticket = state->TakeGrant(service, id)) co_return ticket;
    if (std::chrono::steady_clock::now() >= deadline) co_return std::nullopt;
    if (!state->UnavailableReason(service).empty()) co_return std::nullopt;  // Place says why
    // Also re-check every second, in case a replica became healthy again without a publish
    // (an ejection ran out) and to notice a client that hung up.
    timer->expires_at(std::min(deadline, std::chrono::steady_clock::now() +
                                             std::chrono::seconds(1)));
    co_await timer->async_wait(kTuple);
  }
}

awaitable<bool> GatewayServer::Impl::Forward(beast::tcp_stream& client, Request& req,
                                             SteadyTime arrival) {
  const bool by_cache = config.picker.kind == route::PickerKind::kPrefixCache;
  Result<InferenceRequest> parsed = ParseInferenceRequest(
      req.body(), config.prefix_chars, by_cache ? config.prefix_cache.block_tokens : 0);
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
  RouteKey key;
  if (config.picker.prefix_affinity) key.prefix_key = parsed->prefix_key;
  key.blocks = parsed->prompt_blocks;
  key.prompt_tokens = parsed->prompt_tokens;
  RequestMeasurement m;
  DoorAdmission door;
  if (const std::optional<Canned> refused = AdmitAtDoor(req, *parsed, *service, arrival, door, m)) {
    const bool sent = co_await Send(client, req, *refused);
    co_return sent;
  }
  bool kept = false;
  const bool disaggregated = state->Disaggregated(*service);
  const RoutePool first_pool = disaggregated ? RoutePool::kPrefill : RoutePool::kServe;
  std::optional<Ticket> ticket =
      co_await Place(client, req, *service, key, first_pool, door, arrival, m, kept);
  if (!ticket) co_return kept;
  // A disaggregated service: the prefill step first; the decode step is relayed below. The
  // prefill replica stays counted in flight until the decode replica's first byte.
  std::optional<Request> decode;
  HeldTicket hold(*state);
  if (disaggregated) {
    decode = co_await Prefill(client, req, *service, key, *ticket, arrival, m, kept, hold);
    if (!decode) co_return kept;
    ticket = co_await Place(client, req, *service, key, RoutePool::kServe, door, arrival, m, kept);
    if (!ticket) co_return kept;
  }
  const Request& upstream_req = decode ? *decode : req;
  // One retry on another replica when the first attempt got no response byte.
  std::set<std::string> tried;
  for (int attempt = 0;; ++attempt) {
    const Attempt result = co_await Relay(client, upstream_req, *ticket, arrival, m, &hold);
    const AttemptOutcome outcome = OutcomeOf(result);
    state->Release(*ticket, outcome);
    if (result != Attempt::kRetryable) {
      m.e2e_seconds = SecondsSince(arrival);
      // The prefill step was replica time, not the gateway's (RequestMeasurement).
      if (disaggregated) m.added_seconds.reset();
      state->Record(*service, m);
      co_return result == Attempt::kRelayed;
    }
    tried.insert(ticket->replica);
    if (attempt == 1 ||
        !(ticket = state->Acquire(*service, key, tried, RoutePool::kServe, door.priority)))
      break;
    ticket->tokens = door.tokens;
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

awaitable<std::optional<Ticket>> GatewayServer::Impl::Place(
    beast::tcp_stream& client, const Request& req, const std::string& service, RouteKey key,
    RoutePool pool, const DoorAdmission& door, SteadyTime arrival, RequestMeasurement& m,
    bool& kept) {
  std::optional<Ticket> ticket = state->Admit(service, key, pool, door.tokens, door.priority);
  if (ticket) co_return ticket;
  route::Admission admission;
  bool gone = false;
  const bool sheddable = door.priority == route::Priority::kSheddable;
  // A service whose replicas cannot start is answered at once (and its waiters when it
  // turns so): waiting would end only at queue_timeout.
  std::string cannot_start = state->UnavailableReason(service);
  if (cannot_start.empty()) {
    const Seconds max_wait =
        sheddable ? std::min(config.queue_timeout, config.admission.sheddable_max_wait)
                  : config.queue_timeout;
    const SteadyTime deadline = arrival + Ticks(max_wait);
    const int client_fd = client.socket().native_handle();
    WaitRequest wait{
        .pool = pool,
        .key = key,
        .priority = door.priority,
        .tenant = door.tenant,
        .tokens = door.tokens,
        .max_wait_seconds = sheddable ? std::optional(max_wait.count()) : std::nullopt};
    ticket =
        co_await WaitForReplica(service, std::move(wait), deadline, client_fd, admission, gone);
    m.queue_seconds = SecondsSince(arrival);
    if (ticket) co_return ticket;
    if (!gone && admission.verdict == route::AdmissionVerdict::kQueued) {
      cannot_start = state->UnavailableReason(service);
    }
  }
  if (!cannot_start.empty()) {
    const bool sent = co_await SendCannotStart(client, req, service, cannot_start, arrival, m);
    kept = sent;
    co_return std::nullopt;
  }
  const bool full = admission.verdict == route::AdmissionVerdict::kFull;
  // A sheddable request refused at once or whose wait ran out: shed, never a silent timeout.
  const bool shed = !gone && !full && sheddable;
  m.status = gone ? 0 : shed ? 429 : 503;
  m.error = gone ? "client_gone" : shed ? "shed" : full ? "queue_full" : "queue_timeout";
  m.e2e_seconds = SecondsSince(arrival);
  state->Record(service, m);
  kept = false;
  if (gone) co_return std::nullopt;  // nobody to answer
  if (shed) {
    const Canned refused = ShedReply(service, admission, config.admission.sheddable_max_wait);
    kept = co_await Send(client, req, refused);
    co_return std::nullopt;
  }
  const std::string_view kind = pool == RoutePool::kPrefill ? "prefill " : "";
  const std::string message =
      full ? fmt::format("service '{}' has no ready {}replica and {} requests already wait",
                         service, kind, config.queue_size)
           : fmt::format("service '{}' had no ready {}replica within {} s", service, kind,
                         config.queue_timeout.count());
  const Canned unavailable = ErrorReply(http::status::service_unavailable, message, "server_error",
                                        "", "no_ready_replica", 5);
  kept = co_await Send(client, req, unavailable);
  co_return std::nullopt;
}

std::optional<Canned> GatewayServer::Impl::AdmitAtDoor(const Request& req,
                                                       const InferenceRequest& parsed,
                                                       const std::string& service,
                                                       SteadyTime arrival, DoorAdmission& door,
                                                       RequestMeasurement& m) {
  const auto header = [&req](const std::string& name) -> std::optional<std::string_view> {
    if (name.empty()) return std::nullopt;
    auto it = req.find(beast::string_view(name.data(), name.size()));
    if (it == req.end()) return std::nullopt;
    return std::string_view(it->value().data(), it->value().size());
  };
  const auto authorization = req[http::field::authorization];
  Result<DoorAdmission> read = ReadDoorAdmission(
      config.admission, parsed.model,
      {header(config.admission.priority_header), header(config.admission.tenant_header),
       std::string_view(authorization.data(), authorization.size())},
      req.body().size());
  if (!read) {
    return ErrorReply(http::status::bad_request, read.error().message, "invalid_request_error",
                      read.error().field, "invalid_priority");
  }
  door = std::move(*read);
  const route::TokenLimitDecision limit = state->TakeTenantTokens(door.tenant, door.tokens);
  if (limit.allowed) return std::nullopt;
  m.status = 429;
  m.error = "rate_limited";
  m.e2e_seconds = SecondsSince(arrival);
  state->Record(service, m);
  const std::string message =
      limit.retry_after_seconds > 0
          ? fmt::format(
                "Rate limit reached for tokens per minute: limit {:.0f}, remaining {:.0f}, "
                "requested {:.0f} (expected prompt and output tokens)",
                limit.limit_tokens, std::floor(limit.remaining_tokens), door.tokens)
          : fmt::format("Request too large for tokens per minute: limit {:.0f}, requested {:.0f}",
                        limit.limit_tokens, door.tokens);
  Canned reply =
      ErrorReply(http::status::too_many_requests, message, "tokens", "", "rate_limit_exceeded",
                 static_cast<int>(std::ceil(std::max(1.0, limit.retry_after_seconds))));
  reply.headers = RateLimitHeaders(limit);
  return reply;
}

awaitable<bool> GatewayServer::Impl::SendCannotStart(beast::tcp_stream& client, const Request& req,
                                                     const std::string& service,
                                                     const std::string& reason, SteadyTime arrival,
                                                     RequestMeasurement& m) {
  m.status = 503;
  m.error = "cannot_start";
  m.e2e_seconds = SecondsSince(arrival);
  state->Record(service, m);
  const Canned unavailable =
      ErrorReply(http::status::service_unavailable,
                 fmt::format("service '{}' cannot start replicas: {}", service, reason),
                 "server_error", "", "service_unavailable", 10);
  const bool sent = co_await Send(client, req, unavailable);
  co_return sent;
}

awaitable<std::optional<Request>> GatewayServer::Impl::Prefill(
    beast::tcp_stream& client, const Request& req, const std::string& service, RouteKey key,
    const Ticket& ticket, SteadyTime arrival, RequestMeasurement& m, bool& kept, HeldTicket& hold) {
  auto executor = co_await asio::this_coro::executor;
  UpstreamPool& pool = threads.For(executor).pool;
  PrefillStepResult step = co_await RunPrefillStep(*state, pool, req, service, key, ticket, m);
  if (step.held) hold.Hold(std::move(*step.held));
  if (step.ok) {
    std::optional<Request> decode(req);
    decode->body() = std::move(step.decode_body);
    co_return decode;
  }
  m.status = step.status;
  m.e2e_seconds = SecondsSince(arrival);
  state->Record(service, m);
  const Canned failed{static_cast<http::status>(step.status), std::move(step.body)};
  kept = co_await Send(client, req, failed);
  co_return std::nullopt;
}

awaitable<Attempt> GatewayServer::Impl::Relay(beast::tcp_stream& client, const Request& req,
                                              const Ticket& ticket, SteadyTime arrival,
                                              RequestMeasurement& m, HeldTicket* hold,
                                              bool allow_pooled) {
  auto executor = co_await asio::this_coro::executor;
  const std::string port = std::to_string(ticket.port);
  const std::string pool_key = ticket.host + ":" + port;
  RelayThread& thread = threads.For(executor);
  std::optional<tcp::socket> pooled;
  if (allow_pooled) pooled = thread.pool.Take(pool_key);
  const bool reused = pooled.has_value();
  beast::tcp_stream upstream =
      reused ? beast::tcp_stream(std::move(*pooled)) : beast::tcp_stream(executor);
  if (!reused) {
    // Inline, as in prefill_step.cc: a shared coroutine helper for these lines, awaited from
    // both files, had asio resume its caller's freed frame under clang 14 + ASan
    // (GatewayDisaggTest, use-after-free in awaitable_frame_base::resume).
    tcp::resolver resolver(executor);
    auto [rec, endpoints] = co_await resolver.async_resolve(ticket.host, port, kTuple);
    if (rec) co_return Attempt::kRetryable;
    upstream.expires_after(Ticks(config.connect_timeout));
    auto [cec, ep] = co_await upstream.async_connect(endpoints, kTuple);
    if (cec) co_return Attempt::kRetryable;
    state->UpstreamConnected();
    boost::system::error_code ignored;
    upstream.socket().set_option(tcp::no_delay(true), ignored);  // kept while pooled
  }

  // Timeouts from here on are the watch's (relay_threads.h), not per-operation timers.
  upstream.expires_never();
  RelayWatch::Relay relay{.client = &client,
                          .upstream = &upstream,
                          .upstream_timeout = Ticks(config.upstream_timeout),
                          .stream_idle_timeout = Ticks(config.stream_idle_timeout),
                          .replica_down = ticket.down.get()};
  thread.watch.Add(relay, executor);
  struct Unwatch {
    RelayWatch& watch;
    RelayWatch::Relay& relay;
    bool active = true;
    void Now() {
      if (active) watch.Remove(relay);
      active = false;
    }
    ~Unwatch() { Now(); }
  } unwatch{thread.watch, relay};

  const std::string head = RequestHead(req, ticket.host, port, !config.token.empty());
  const std::array<asio::const_buffer, 2> request{asio::buffer(head), asio::buffer(req.body())};
  relay.upstream_since = RelayWatch::Clock::now();  // the write and then the first byte
  boost::system::error_code wec;
  const size_t sent_now = SendNow(upstream.socket(), request, wec);
  if (!wec && sent_now < asio::buffer_size(request)) {
    beast::buffers_suffix<std::array<asio::const_buffer, 2>> rest(request);
    rest.consume(sent_now);
    auto [ec, n] = co_await asio::async_write(upstream, rest, kTuple);
    wec = ec;
  }
  // The gateway's part until here (the queue aside); the replica's starts (added_seconds).
  const double before_replica = SecondsSince(arrival) - m.queue_seconds;
  if (wec && reused && relay.ended == RelayWatch::Ended::kNo) {
    // The replica closed the idle connection as we took it: a fresh one, same replica.
    unwatch.Now();
    const Attempt fresh = co_await Relay(client, req, ticket, arrival, m, hold, false);
    co_return fresh;
  }
  if (wec && relay.ended != RelayWatch::Ended::kClientGone) co_return Attempt::kRetryable;

  beast::flat_buffer upstream_buffer;
  std::optional<http::response_parser<http::buffer_body>> parsing(std::in_place);
  // A non-streaming request has no response byte until the replica is done; meanwhile a
  // client that hangs up cancels the work at the replica (the watch checks it).
  boost::system::error_code hec = wec;
  while (!hec) {
    parsing->body_limit(std::numeric_limits<uint64_t>::max());
    auto [ec, n] = co_await http::async_read_header(upstream, upstream_buffer, *parsing, kTuple);
    hec = ec;
    // An interim response (a 100 Continue a replica sends anyway, a 103) is not the answer:
    // the final one follows (RFC 9110 15.2). Relayed, it ended the client's response.
    const unsigned code = parsing->get().result_int();
    if (hec || code < 100 || code >= 200 || code == 101) break;
    parsing.emplace();
  }
  http::response_parser<http::buffer_body>& parser = *parsing;
  relay.upstream_since = {};
  relay.awaiting_first_byte = false;
  if (relay.ended == RelayWatch::Ended::kClientGone) {
    m.error = "client_gone";
    m.status = 0;
    co_return Attempt::kClientGone;
  }
  if (hec && reused && relay.ended == RelayWatch::Ended::kNo) {
    unwatch.Now();
    const Attempt fresh = co_await Relay(client, req, ticket, arrival, m, hold, false);
    co_return fresh;
  }
  if (hec) co_return Attempt::kRetryable;

  // The replica answered: from here on a failure reaches the client.
  m.replica = ticket.replica;
  auto& res = parser.get();
  m.status = res.result_int();
  const ResponseFraming framing = Framing(req, parser);
  const std::string response_head = ResponseHead(res, framing);
  const auto content_type = res[http::field::content_type];
  const bool event_stream =
      std::string_view(content_type.data(), content_type.size()).starts_with("text/event-stream");
  bool head_sent = false;
  std::array<char, kRelayChunkBytes> buf;
  SseClock sse;
  std::optional<SteadyTime> first_read;  // the first body byte from the replica
  // async_read_some returns as soon as the parser made progress, so each SSE chunk is
  // written on as it comes (async_read would wait to fill the buffer).
  for (;;) {
    size_t got = 0;
    if (!parser.is_done()) {
      res.body().data = buf.data();
      res.body().size = buf.size();
      relay.upstream_since = RelayWatch::Clock::now();
      auto [ec, n] = co_await http::async_read_some(upstream, upstream_buffer, parser, kTuple);
      relay.upstream_since = {};
      if (ec == http::error::need_buffer) ec = {};
      if (!ec) ec = ParseBuffered(parser, upstream_buffer);
      if (ec) {
        const RelayWatch::Ended ended = relay.ended;
        unwatch.Now();
        if (ended == RelayWatch::Ended::kClientTimeout || ended == RelayWatch::Ended::kClientGone) {
          m.error = "client_gone";
          m.status = 0;
          co_return Attempt::kClientGone;  // nobody reads an error event
        }
        std::string why;
        http::status status = http::status::bad_gateway;
        if (ended == RelayWatch::Ended::kReplicaDown) {
          m.error = "replica_down";
          why = fmt::format(
              "replica {} stopped answering the gateway's health checks; the "
              "response was cut",
              ticket.replica);
        } else if (ended == RelayWatch::Ended::kUpstreamTimeout) {
          m.error = "upstream_timeout";
          status = http::status::gateway_timeout;
          why =
              fmt::format("replica {} sent nothing for {} s; the response was cut", ticket.replica,
                          std::chrono::duration<double>(relay.SilenceLimit()).count());
        } else {
          m.error = "upstream_broken";
          why = fmt::format("replica {} closed the response before its end", ticket.replica);
        }
        if (!head_sent) m.status = static_cast<int>(status);
        co_await EndCut(client, req, head_sent, framing, event_stream, status, why, m.error);
        co_return Attempt::kBroken;  // the client connection closes
      }
      got = buf.size() - res.body().size;
      if (got == 0 && !parser.is_done()) continue;  // framing only (a chunk header)
      if (got > 0) relay.body_started = true;
      if (got > 0 && !m.ttft_seconds) {
        m.ttft_seconds = SecondsSince(arrival);
        first_read = std::chrono::steady_clock::now();
      }
      if (got > 0 && hold != nullptr) hold->Release();
      sse.Observe(std::string_view(buf.data(), got), SecondsSince(arrival));
    }
    const bool last = parser.is_done();
    ChunkWriter out;
    if (!head_sent) out.Add(response_head);
    out.AddBody(std::string_view(buf.data(), got), framing.chunked, last);
    if (!out.empty()) {
      boost::system::error_code ec;
      const size_t written = SendNow(client.socket(), out.buffers(), ec);
      if (!ec && written < asio::buffer_size(out.buffers())) {
        relay.client_since = RelayWatch::Clock::now();
        beast::buffers_suffix<std::span<const asio::const_buffer>> rest(out.buffers());
        rest.consume(written);
        auto [wec, n] = co_await asio::async_write(client, rest, kTuple);
        relay.client_since = {};
        ec = wec;
      }
      if (ec) {
        m.error = "client_gone";
        m.status = 0;
        co_return Attempt::kClientGone;  // `upstream` closes here: the replica stops the work
      }
      if (first_read && !m.added_seconds) {
        m.added_seconds = before_replica + SecondsSince(*first_read);
      }
    }
    head_sent = true;
    if (last) break;
  }
  m.tpot_seconds = sse.MeanGapSeconds();
  if (m.status >= 500) m.error = "upstream_5xx";
  if (parser.keep_alive()) thread.pool.Give(pool_key, upstream.release_socket());
  co_return framing.keep_alive ? Attempt::kRelayed : Attempt::kRelayedClose;
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
  impl->checker = HealthChecker::Start(impl->server->NextContext(), impl->state);
  if (config.picker.kind == route::PickerKind::kPrefixCache &&
      config.picker.prefix_index == route::PrefixIndexMode::kPrecise) {
    impl->kv_subscriber = std::make_unique<KvEventSubscriber>(impl->state->kv_events(),
                                                              config.prefix_cache.kv_events_topic);
    KvEventSubscriber* subscriber = impl->kv_subscriber.get();
    impl->state->SetKvEndpointsListener([subscriber](std::map<std::string, std::string> e) {
      subscriber->SetEndpoints(std::move(e));
    });
    subscriber->SetEndpoints(impl->state->KvEventEndpoints());
  }
  return std::unique_ptr<GatewayServer>(new GatewayServer(std::move(impl)));
}

void GatewayServer::Stop() {
  if (!impl_ || !impl_->server) return;
  if (impl_->checker) impl_->checker->Stop();
  if (impl_->kv_subscriber) {
    impl_->state->SetKvEndpointsListener(nullptr);
    impl_->kv_subscriber.reset();  // joins its thread
  }
  impl_->server->Stop();       // joins the I/O threads
  impl_->threads.CloseIdle();  // while the io_contexts the pooled sockets use still exist
}

int GatewayServer::port() const { return impl_->server->port(); }

std::string GatewayServer::url() const { return impl_->server->url(); }

}  // namespace gpuscale::gateway
