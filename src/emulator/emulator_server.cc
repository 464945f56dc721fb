#include "emulator/emulator_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "emulator/kv_event_publisher.h"
#include "emulator/openai_protocol.h"
#include "emulator/vllm_metrics.h"
#include "net/http_server.h"
#include "route/prompt_blocks.h"

namespace gpuscale::emulator {

using SteadyClock = std::chrono::steady_clock;

namespace {

// The engine a server runs: the options' with the served context limit (0 would let a
// request longer than the model's context in, contradicting GET /v1/models).
EngineConfig ServedEngine(EngineConfig engine) {
  engine.max_model_len = ServedMaxModelLen(engine);
  return engine;
}

}  // namespace

int32_t ServedMaxModelLen(const EngineConfig& engine) {
  return engine.max_model_len > 0 ? engine.max_model_len : kDefaultMaxModelLen;
}

struct EmulatorServer::Impl {
  explicit Impl(const EmulatorOptions& opts)
      : options(opts), config(ServedEngine(opts.engine)), engine(config) {}

  Seconds Now() const { return SteadyClock::now() - epoch; }
  bool Loaded() const { return Now().count() >= options.startup_seconds; }

  // Drains the engine's KV events (so they never pile up) and publishes them when asked to.
  void PublishKvEvents() GS_REQUIRES(mu) {
    std::vector<kvevents::KvEvent> events = engine.TakeKvEvents();
    if (events.empty() || !kv_publisher) return;
    kv_publisher->Publish({SystemClock::Instance().Now().count(), std::move(events), {}});
  }

  // Runs every registered waker once (they re-register when they wait again).
  void WakeWaiters() GS_REQUIRES(mu) {
    std::vector<std::function<void()>> wake;
    wake.swap(waiters);
    for (const auto& w : wake) w();
  }

  const EmulatorOptions options;
  const EngineConfig config;  // the engine's (ServedEngine): read without mu
  const SteadyClock::time_point epoch = SteadyClock::now();
  const int64_t created_unix_seconds = static_cast<int64_t>(SystemClock::Instance().Now().count());
  std::thread scheduler;
  std::atomic<uint64_t> next_response_id{1};
  std::atomic<int64_t> next_kv_block{0};  // prefill role: the handles' block ids

  mutable Mutex mu;
  CondVar progress_cv;   // Shutdown(): open_requests reached 0
  CondVar scheduler_cv;  // scheduler: a new step may have started (submitted), stop
  BatchEngine engine GS_GUARDED_BY(mu);
  std::unique_ptr<KvEventPublisher> kv_publisher GS_GUARDED_BY(mu);  // null: not publishing
  // Handlers waiting for engine progress: each posts a wake-up to its connection's I/O thread.
  std::vector<std::function<void()>> waiters GS_GUARDED_BY(mu);
  int open_requests GS_GUARDED_BY(mu) = 0;       // submitted, response not yet released
  uint64_t submitted GS_GUARDED_BY(mu) = 0;      // Submit calls that added sequences
  bool draining GS_GUARDED_BY(mu) = false;       // Shutdown() began; new requests get 503
  bool abort_streams GS_GUARDED_BY(mu) = false;  // drain time is over; handlers give up
  bool stop_scheduler GS_GUARDED_BY(mu) = false;
  bool shut_down GS_GUARDED_BY(mu) = false;
  // Last: destroyed first, so coroutines it still holds release their requests while the
  // engine above is alive.
  std::unique_ptr<net::HttpServer> http;
};

namespace {

using Impl = EmulatorServer::Impl;
namespace asio = net::asio;
namespace beast = net::beast;
namespace http = net::http;
using asio::awaitable;
using net::kTuple;
using net::Request;
using net::StringResponse;

StringResponse ErrorResponse(int status, std::string_view message, std::string_view type,
                             std::string_view param = {}) {
  StringResponse res{static_cast<http::status>(status), 11};
  res.set(http::field::content_type, "application/json");
  res.body() = ErrorBody(message, type, param, status);
  return res;
}

StringResponse TextResponse(int status, std::string body, std::string_view content_type) {
  StringResponse res{static_cast<http::status>(status), 11};
  res.set(http::field::content_type, content_type);
  res.body() = std::move(body);
  return res;
}

// Sleeps until the step in progress ends, advances the engine and wakes the handlers. A
// thread of its own: the engine's clock is real time, independent of the I/O load.
void RunScheduler(Impl& impl) {
  MutexLock lock(impl.mu);
  while (!impl.stop_scheduler) {
    impl.engine.Advance(impl.Now());
    impl.PublishKvEvents();
    impl.WakeWaiters();
    // A submission may start a step sooner than the one awaited (or the first one).
    const uint64_t submitted = impl.submitted;
    const auto woken = [&impl, submitted]() GS_REQUIRES(impl.mu) {
      return impl.stop_scheduler || impl.submitted != submitted;
    };
    if (std::optional<Seconds> end = impl.engine.NextStepEnd()) {
      impl.scheduler_cv.WaitUntil(
          impl.mu, impl.epoch + std::chrono::ceil<SteadyClock::duration>(*end), woken);
    } else {
      impl.scheduler_cv.Wait(impl.mu, woken);
    }
  }
}

// What one choice of a request will produce: its prompt, its output length (the limit, or
// the emulated model's answer when that is shorter) and how it ends.
struct ChoicePlan {
  int32_t prompt_tokens = 1;
  std::vector<uint64_t> block_keys;  // with a prefix cache: the prompt's (prompt_blocks.h)
  int32_t tokens = 1;
  Finish finish = Finish::kLength;
};

// Ends a request's life in the engine once its response is done (or abandoned).
void ReleaseRequest(Impl& impl, const std::vector<RequestId>& ids) {
  MutexLock lock(impl.mu);
  for (RequestId id : ids) impl.engine.Forget(id, impl.Now());
  --impl.open_requests;
  impl.progress_cv.NotifyAll();  // Shutdown() waits for open_requests to reach 0
}

// Releases a submitted request's sequences however its handler ends (finished, client gone,
// or the coroutine destroyed at shutdown).
struct RequestGuard {
  Impl& impl;
  std::vector<RequestId> ids;
  ~RequestGuard() { ReleaseRequest(impl, ids); }
};

bool Done(const RequestProgress* progress) {
  return progress == nullptr || progress->state == RequestState::kFinished ||
         progress->state == RequestState::kCancelled;
}

// What a handler saw of one choice's sequence when it woke.
struct Seen {
  int32_t generated = 0;
  bool finished = false;  // kFinished (not cancelled)
  bool over = false;      // finished, cancelled, forgotten or aborted: no more tokens come
};

// Suspends the calling coroutine (without blocking its thread) until some choice has more
// tokens than `sent` says or every choice is over. The scheduler's wake-up is posted to this
// coroutine's I/O thread, so it cannot run between the check and the wait; the 1 s bound
// re-checks anyway.
awaitable<std::vector<Seen>> WaitForTokens(Impl& impl, const std::vector<RequestId>& ids,
                                           const std::vector<int32_t>& sent) {
  auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
  std::vector<Seen> seen(ids.size());
  for (;;) {
    bool ready = true;  // every choice over, unless one is not
    {
      MutexLock lock(impl.mu);
      for (size_t c = 0; c < ids.size(); ++c) {
        const RequestProgress* p = impl.engine.Find(ids[c]);
        seen[c].generated = p ? p->tokens_generated : sent[c];
        seen[c].finished = p && p->state == RequestState::kFinished;
        seen[c].over = impl.abort_streams || Done(p);
        ready = ready && seen[c].over;
      }
      for (size_t c = 0; c < ids.size(); ++c) ready = ready || seen[c].generated > sent[c];
      if (!ready) {
        timer->expires_after(std::chrono::seconds(1));
        impl.waiters.push_back(
            [timer] { asio::post(timer->get_executor(), [timer] { timer->cancel(); }); });
      }
    }
    if (ready) co_return seen;
    co_await timer->async_wait(kTuple);
  }
}

// The events for the tokens of `seen` not yet in `sent` (which it advances): per choice, the
// chat role first, then one event per token, the last with the choice's finish reason.
std::string TokenEvents(const ResponseHeader& header, const CompletionRequest& request,
                        const std::vector<ChoicePlan>& plans, const std::vector<Seen>& seen,
                        std::vector<int32_t>& sent, Usage& usage) {
  std::string events;
  for (size_t c = 0; c < plans.size(); ++c) {
    const auto choice = static_cast<int32_t>(c);
    if (sent[c] == 0 && seen[c].generated > 0 && header.endpoint == Endpoint::kChatCompletions) {
      events += StreamRoleEvent(header, choice);  // with the first token, as vLLM sends it
    }
    for (; sent[c] < seen[c].generated; ++sent[c]) {
      ++usage.completion_tokens;
      const Finish finish = sent[c] + 1 == plans[c].tokens ? plans[c].finish : Finish::kNotYet;
      events += StreamTokenEvent(header, choice, sent[c], finish,
                                 request.continuous_usage ? std::optional(usage) : std::nullopt);
    }
  }
  return events;
}

// One event per token as the engine produces them, in HTTP chunks; ends with [DONE] when
// every choice finished, or without it (connection closed) when the drain time ran out.
awaitable<bool> StreamTokens(Impl& impl, beast::tcp_stream& stream, const Request& req,
                             const std::vector<RequestId>& ids, const ResponseHeader& header,
                             const CompletionRequest& request,
                             const std::vector<ChoicePlan>& plans) {
  http::response<http::empty_body> res{http::status::ok, 11};
  res.set(http::field::content_type, "text/event-stream");
  res.set(http::field::cache_control, "no-cache");
  res.chunked(true);
  res.keep_alive(req.keep_alive());
  http::response_serializer<http::empty_body> serializer{res};
  stream.expires_after(net::kClientWriteTimeout);
  auto [hec, hn] = co_await http::async_write_header(stream, serializer, kTuple);
  if (hec) co_return false;
  std::vector<int32_t> sent(ids.size(), 0);
  Usage usage{request.TotalPromptTokens(), 0};
  for (;;) {
    const std::vector<Seen> seen = co_await WaitForTokens(impl, ids, sent);
    std::string events = TokenEvents(header, request, plans, seen, sent, usage);
    const bool finished =
        std::all_of(seen.begin(), seen.end(), [](const Seen& s) { return s.finished; });
    const bool aborted = std::any_of(seen.begin(), seen.end(),
                                     [](const Seen& s) { return s.over && !s.finished; });
    if (finished) {
      if (request.include_usage) events += StreamUsageEvent(header, usage);
      events += StreamDoneEvent();
    }
    if (!events.empty()) {
      stream.expires_after(net::kClientWriteTimeout);
      const auto chunk = http::make_chunk(asio::buffer(events));
      auto [ec, n] = co_await asio::async_write(stream, chunk, kTuple);
      if (ec) co_return false;  // the client left: the guard cancels the request
    }
    if (finished) {
      const auto last = http::make_chunk_last();
      auto [ec, n] = co_await asio::async_write(stream, last, kTuple);
      stream.expires_never();
      co_return !ec;
    }
    if (aborted) co_return false;  // an unterminated stream tells the client
  }
}

// vLLM's wording for a request past the context, so clients that parse it behave the same.
std::optional<StringResponse> CheckContext(const CompletionRequest& request,
                                           int32_t max_model_len) {
  const bool chat = request.endpoint == Endpoint::kChatCompletions;
  for (int32_t prompt : request.prompts) {
    if (!request.max_tokens && prompt >= max_model_len) {
      return ErrorResponse(400,
                           fmt::format("This model's maximum context length is {} tokens. "
                                       "However, your prompt has {} tokens and leaves no room "
                                       "for output. Please reduce the length of the {}.",
                                       max_model_len, prompt, chat ? "messages" : "prompt"),
                           "BadRequestError", chat ? "messages" : "prompt");
    }
    if (request.max_tokens && int64_t{prompt} + *request.max_tokens > max_model_len) {
      return ErrorResponse(
          400,
          fmt::format("This model's maximum context length is {} tokens. However, you "
                      "requested {} tokens ({} in the {}, {} in the completion). Please reduce "
                      "the length of the {} or completion.",
                      max_model_len, int64_t{prompt} + *request.max_tokens, prompt,
                      chat ? "messages" : "prompt", *request.max_tokens,
                      chat ? "messages" : "prompt"),
          "BadRequestError", "max_tokens");
    }
  }
  return std::nullopt;
}

// Each choice's output: up to the limit (max_tokens, else the context left), ending earlier
// ("stop") at the emulated answer length unless the request ignores the end of sequence.
std::vector<ChoicePlan> PlanChoices(const CompletionRequest& request, int32_t max_model_len,
                                    int32_t answer_tokens, int32_t block_tokens) {
  std::vector<ChoicePlan> plans;
  for (int32_t c = 0; c < request.Choices(); ++c) {
    ChoicePlan plan;
    plan.prompt_tokens = request.PromptOfChoice(c);
    if (block_tokens > 0) {
      route::PromptBlockKeys(request.PromptTextOfChoice(c), block_tokens, &plan.block_keys);
    }
    const int32_t limit = request.max_tokens.value_or(max_model_len - plan.prompt_tokens);
    const bool stops = !request.ignore_eos && answer_tokens > 0 && answer_tokens < limit;
    plan.tokens = stops ? answer_tokens : limit;
    plan.finish = stops ? Finish::kStop : Finish::kLength;
    plans.push_back(plan);
  }
  return plans;
}

// Admission checks shared by both completion endpoints; an error response, or nullopt with
// `request` and `plans` filled in.
std::optional<StringResponse> Admit(Impl& impl, const Request& req, Endpoint endpoint,
                                    CompletionRequest& request, std::vector<ChoicePlan>& plans) {
  if (!impl.Loaded()) {
    return ErrorResponse(503, "the model is still loading", "ServiceUnavailableError");
  }
  Result<CompletionRequest> parsed = ParseCompletionRequest(req.body(), endpoint);
  if (!parsed) {
    return ErrorResponse(400, parsed.error().ToString(), "BadRequestError",
                         parsed.error().field);
  }
  if (!parsed->model.empty() && parsed->model != impl.options.model_name) {
    return ErrorResponse(404, fmt::format("The model `{}` does not exist.", parsed->model),
                         "NotFoundError", "model");
  }
  const int32_t max_model_len = impl.config.max_model_len;
  if (auto refused = CheckContext(*parsed, max_model_len)) return refused;
  request = std::move(*parsed);
  plans = PlanChoices(request, max_model_len, impl.options.output_tokens,
                      impl.config.prefix_block_tokens);
  return std::nullopt;
}

// Submits one engine sequence per choice of an admitted request (all or none); an error
// response, or nullopt with `ids` set. `transferred`: a decode replica's request whose KV
// arrived; it was counted open (TransferHold) before the drain could begin, so a drain
// lets it in (that is the transfer it waits for), unless the drain time is already over.
std::optional<StringResponse> Submit(Impl& impl, const std::vector<ChoicePlan>& plans,
                                     std::vector<RequestId>& ids, bool transferred = false) {
  MutexLock lock(impl.mu);
  if (transferred ? impl.abort_streams : impl.draining) {
    return ErrorResponse(503, "the server is shutting down", "ServiceUnavailableError");
  }
  for (const ChoicePlan& plan : plans) {
    Result<RequestId> submitted =
        impl.engine.Submit(plan.prompt_tokens, plan.tokens, impl.Now(),
                           plan.finish == Finish::kStop, transferred, plan.block_keys);
    if (!submitted) {
      for (RequestId id : ids) impl.engine.Forget(id, impl.Now());
      ids.clear();
      return ErrorResponse(400, submitted.error().ToString(), "BadRequestError",
                           submitted.error().field);
    }
    ids.push_back(*submitted);
  }
  if (!transferred) ++impl.open_requests;
  impl.PublishKvEvents();
  ++impl.submitted;
  impl.scheduler_cv.NotifyOne();
  return std::nullopt;
}

// A decode replica's KV transfer in flight: counted as an open request from before it starts
// (503 when draining already) until Submit takes it over (`held` false) or it is given up.
struct TransferHold {
  Impl& impl;
  bool held = false;
  std::optional<StringResponse> Reserve() {
    MutexLock lock(impl.mu);
    if (impl.draining) {
      return ErrorResponse(503, "the server is shutting down", "ServiceUnavailableError");
    }
    ++impl.open_requests;
    held = true;
    return std::nullopt;
  }
  ~TransferHold() {
    if (held) ReleaseRequest(impl, {});
  }
};

// The role's part of admission (disagg_role.h): a 400 naming the field, or nullopt.
std::optional<StringResponse> PlanReplicaRole(const Impl& impl, const CompletionRequest& request,
                                              RolePlan& plan) {
  Result<RolePlan> planned = PlanRole(impl.options.role, impl.options.kv_link, request);
  if (!planned) {
    return ErrorResponse(400, planned.error().ToString(), "BadRequestError", planned.error().field);
  }
  plan = *planned;
  return std::nullopt;
}

// A decode replica: waits the emulated KV transfer (without blocking the I/O thread), then
// submits the request with its prompt already in KV.
awaitable<std::optional<StringResponse>> TransferThenSubmit(Impl& impl,
                                                            const std::vector<ChoicePlan>& plans,
                                                            double seconds,
                                                            std::vector<RequestId>& ids) {
  TransferHold hold{impl};
  if (std::optional<StringResponse> refused = hold.Reserve()) co_return refused;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer.expires_after(std::chrono::ceil<SteadyClock::duration>(Seconds{seconds}));
  // Not cut short: at Stop() the frame is destroyed instead, and the hold released.
  co_await timer.async_wait(kTuple);
  std::optional<StringResponse> refused = Submit(impl, plans, ids, /*transferred=*/true);
  if (!refused) hold.held = false;  // RequestGuard releases it from here on
  co_return refused;
}

// The prefill role's answer to do_remote_decode: where this replica holds the prompt's KV.
KvTransferParams KvHandle(Impl& impl, int32_t prompt_tokens) {
  const int port = impl.http->port();
  return MakeKvHandle(fmt::format("gpuscale-emulate-{}", port), impl.options.host, port,
                      prompt_tokens, impl.next_kv_block.fetch_add(KvBlocks(prompt_tokens)));
}

awaitable<bool> HandleCompletion(Impl& impl, beast::tcp_stream& stream, const Request& req,
                                 Endpoint endpoint) {
  CompletionRequest request;
  std::vector<ChoicePlan> plans;
  std::vector<RequestId> ids;
  RolePlan role;
  std::optional<StringResponse> refused = Admit(impl, req, endpoint, request, plans);
  if (!refused) refused = PlanReplicaRole(impl, request, role);
  if (!refused && role.prefilled) {
    const double transfer_seconds = role.transfer_seconds;
    std::optional<StringResponse> transferred =
        co_await TransferThenSubmit(impl, plans, transfer_seconds, ids);
    refused = std::move(transferred);
  } else if (!refused) {
    refused = Submit(impl, plans, ids);
  }
  if (refused) {
    const bool sent = co_await net::WriteResponse(stream, req, *refused);
    co_return sent;
  }
  RequestGuard guard{impl, ids};
  const bool chat = endpoint == Endpoint::kChatCompletions;
  const ResponseHeader header{
      fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", impl.next_response_id++),
      static_cast<int64_t>(SystemClock::Instance().Now().count()), impl.options.model_name,
      endpoint};
  if (request.stream) {
    const bool kept = co_await StreamTokens(impl, stream, req, ids, header, request, plans);
    co_return kept;
  }
  std::vector<int32_t> generated(ids.size(), 0);
  std::vector<Seen> seen;
  for (bool over = false; !over;) {
    seen = co_await WaitForTokens(impl, ids, generated);
    // A client that hung up gets no answer: its sequences are cancelled (the guard), as
    // vLLM aborts a request whose connection closed, instead of generating on for nobody.
    // Bytes of a pipelined next request (kData) mean it is still there.
    if (net::Peek(stream.socket().native_handle()) == net::PeekResult::kClosed) co_return false;
    over = true;
    for (size_t c = 0; c < seen.size(); ++c) {
      generated[c] = seen[c].generated;
      over = over && seen[c].over;
    }
  }
  std::vector<ChoiceResult> results;
  bool finished = true;
  for (size_t c = 0; c < seen.size(); ++c) {
    results.push_back({seen[c].generated, plans[c].finish});
    finished = finished && seen[c].finished;
  }
  std::optional<KvTransferParams> handle;
  if (role.answer_handle) handle = KvHandle(impl, plans[0].prompt_tokens);
  StringResponse res =
      finished
          ? TextResponse(
                200, CompletionResponseBody(header, results, request.TotalPromptTokens(), handle),
                "application/json")
          : ErrorResponse(503, "the server is shutting down", "ServiceUnavailableError");
  const bool sent = co_await net::WriteResponse(stream, req, res);
  co_return sent;
}

StringResponse HealthResponse(Impl& impl) {
  bool draining = false;
  {
    MutexLock lock(impl.mu);
    draining = impl.draining;
  }
  if (draining) return TextResponse(503, "draining\n", "text/plain");
  if (!impl.Loaded()) return TextResponse(503, "loading\n", "text/plain");
  return TextResponse(200, "", "text/plain");
}

StringResponse ModelsResponse(Impl& impl) {
  if (!impl.Loaded()) {
    return ErrorResponse(503, "the model is still loading", "ServiceUnavailableError");
  }
  return TextResponse(200,
                      ModelListBody(impl.options.model_name, impl.created_unix_seconds,
                                    ServedMaxModelLen(impl.options.engine)),
                      "application/json");
}

StringResponse ModelResponse(Impl& impl, std::string_view id) {
  if (id != impl.options.model_name) {
    return ErrorResponse(404, fmt::format("The model `{}` does not exist.", id),
                         "NotFoundError");
  }
  return TextResponse(200,
                      ModelBody(impl.options.model_name, impl.created_unix_seconds,
                                ServedMaxModelLen(impl.options.engine)),
                      "application/json");
}

// The vLLM release whose API and metric names the emulator follows.
StringResponse VersionResponse() {
  return TextResponse(200, R"({"version": "0.12.0"})", "application/json");
}

StringResponse TokenizeResponse(Impl& impl, std::string_view body) {
  Result<int64_t> count = TokenizeCount(body);
  if (!count) {
    return ErrorResponse(400, count.error().message, "BadRequestError", count.error().field);
  }
  return TextResponse(200, TokenizeBody(*count, ServedMaxModelLen(impl.options.engine)),
                      "application/json");
}

// POST /v1/embeddings: answered at once with the emulated vectors (openai_protocol.h); no
// engine time and no vLLM metrics, which count generation.
StringResponse EmbeddingsResponse(Impl& impl, std::string_view body) {
  if (!impl.Loaded()) {
    return ErrorResponse(503, "the model is still loading", "ServiceUnavailableError");
  }
  Result<EmbeddingRequest> request = ParseEmbeddingRequest(body);
  if (!request) {
    return ErrorResponse(400, request.error().ToString(), "BadRequestError", request.error().field);
  }
  if (!request->model.empty() && request->model != impl.options.model_name) {
    return ErrorResponse(404, fmt::format("The model `{}` does not exist.", request->model),
                         "NotFoundError", "model");
  }
  const std::string id = fmt::format("embd-{}", impl.next_response_id++);
  return TextResponse(
      200, EmbeddingResponseBody(*request, id, impl.created_unix_seconds, impl.options.model_name),
      "application/json");
}

StringResponse MetricsResponse(Impl& impl) {
  EngineStats stats;
  {
    MutexLock lock(impl.mu);
    impl.engine.Advance(impl.Now());
    stats = impl.engine.stats();
  }
  std::optional<EmulatedGpu> gpu;
  if (impl.options.gpu_memory_bytes > 0) {
    gpu = EmulatedGpu{static_cast<double>(stats.running) / impl.config.max_batch_size,
                      impl.options.gpu_memory_bytes};
  }
  return TextResponse(200, RenderVllmMetrics(stats, impl.options.model_name, gpu),
                      "text/plain; version=0.0.4; charset=utf-8");
}

// The routes: completions stream or wait without blocking the I/O thread, so /health and
// /metrics answer at once however many streams are open (vLLM's server is asynchronous too).
awaitable<bool> Handle(Impl& impl, beast::tcp_stream& stream, Request& req) {
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const bool get = req.method() == http::verb::get;
  const bool post = req.method() == http::verb::post;
  if (post && (path == "/v1/completions" || path == "/v1/chat/completions")) {
    const Endpoint endpoint =
        path == "/v1/completions" ? Endpoint::kCompletions : Endpoint::kChatCompletions;
    const bool kept = co_await HandleCompletion(impl, stream, req, endpoint);
    co_return kept;
  }
  constexpr std::string_view kModelPrefix = "/v1/models/";
  StringResponse res =
      get && path == "/health"                ? HealthResponse(impl)
      : (get || post) && path == "/ping"      ? HealthResponse(impl)  // SageMaker's probe
      : get && path == "/v1/models"           ? ModelsResponse(impl)
      : get && path.starts_with(kModelPrefix) ? ModelResponse(impl, path.substr(kModelPrefix.size()))
      : get && path == "/version"             ? VersionResponse()
      : post && path == "/tokenize"           ? TokenizeResponse(impl, req.body())
      : post && path == "/v1/embeddings"      ? EmbeddingsResponse(impl, req.body())
      : get && path == "/metrics"             ? MetricsResponse(impl)
                                              : ErrorResponse(404, "Not Found", "NotFoundError");
  const bool sent = co_await net::WriteResponse(stream, req, res);
  co_return sent;
}

}  // namespace

Status ValidateEmulatorOptions(const EmulatorOptions& options) {
  GS_RETURN_IF_ERROR(ValidateEngineConfig(options.engine));
  if (options.port < 0 || options.port > 65535) {
    return InvalidArgument(fmt::format("expected 0..65535, got {}", options.port), "--port");
  }
  if (!std::isfinite(options.startup_seconds) || options.startup_seconds < 0) {
    return InvalidArgument("expected a number of seconds >= 0", "--startup-seconds");
  }
  if (!std::isfinite(options.drain_seconds) || options.drain_seconds < 0) {
    return InvalidArgument("expected a number of seconds >= 0", "--drain-seconds");
  }
  if (options.http_threads < 1 || options.http_threads > 64) {
    return InvalidArgument(fmt::format("expected 1..64, got {}", options.http_threads),
                           "--http-threads");
  }
  if (options.max_connections < 1) {
    return InvalidArgument(fmt::format("expected >= 1, got {}", options.max_connections),
                           "--max-connections");
  }
  if (options.model_name.empty()) return InvalidArgument("expected a name", "--model");
  if (options.output_tokens < 0) {
    return InvalidArgument(fmt::format("expected >= 0 (0: answers run to the limit), got {}",
                                       options.output_tokens),
                           "--output-tokens");
  }
  return OkStatus();
}

Result<std::unique_ptr<EmulatorServer>> EmulatorServer::Start(const EmulatorOptions& options) {
  GS_RETURN_IF_ERROR(ValidateEmulatorOptions(options));
  auto impl = std::make_unique<Impl>(options);
  if (!options.kv_events_endpoint.empty()) {
    GS_ASSIGN_OR_RETURN(auto publisher, KvEventPublisher::Bind(options.kv_events_endpoint,
                                                               options.kv_events_topic));
    MutexLock lock(impl->mu);
    impl->kv_publisher = std::move(publisher);
  }
  net::HttpServerOptions http_options;
  http_options.host = options.host;
  http_options.port = options.port;
  http_options.field = "--port";
  http_options.threads = options.http_threads;
  http_options.max_connections = options.max_connections;
  http_options.max_body_bytes = 32 << 20;
  http_options.header_timeout = Seconds{30};
  http_options.idle_timeout = Seconds{5};  // uvicorn's (vLLM's server) keep-alive default
  Impl* raw = impl.get();
  auto handler = [raw](beast::tcp_stream& stream, Request& req) {
    return Handle(*raw, stream, req);
  };
  auto reject = [](const Request&, http::status status, const std::string& message) {
    return ErrorResponse(static_cast<int>(status), message, "BadRequestError");
  };
  Result<std::unique_ptr<net::HttpServer>> http =
      net::HttpServer::Start(std::move(http_options), handler, reject);
  if (!http) {
    Error e = http.error();
    if (e.code == ErrorCode::kInvalidArgument) e.field = "--host";
    return Unexpected<Error>(e);
  }
  impl->http = std::move(*http);
  impl->scheduler = std::thread([raw] { RunScheduler(*raw); });
  return std::unique_ptr<EmulatorServer>(new EmulatorServer(std::move(impl)));
}

EmulatorServer::EmulatorServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EmulatorServer::~EmulatorServer() { Shutdown(); }

int EmulatorServer::port() const { return impl_->http->port(); }

int EmulatorServer::connections() const { return impl_->http->connections(); }

std::string EmulatorServer::KvEventsEndpoint() const {
  MutexLock lock(impl_->mu);
  return impl_->kv_publisher ? impl_->kv_publisher->endpoint() : std::string();
}

int EmulatorServer::OpenRequests() const {
  MutexLock lock(impl_->mu);
  return impl_->open_requests;
}

EngineStats EmulatorServer::Stats() const {
  MutexLock lock(impl_->mu);
  impl_->engine.Advance(impl_->Now());
  return impl_->engine.stats();
}

void EmulatorServer::Shutdown() {
  Impl& impl = *impl_;
  {
    MutexLock lock(impl.mu);
    if (impl.shut_down) return;
    impl.shut_down = true;
    impl.draining = true;
    // The listener stays open while in-flight requests drain: /health says "draining" and
    // new requests get 503 rather than a refused connection.
    const auto deadline = SteadyClock::now() + std::chrono::ceil<SteadyClock::duration>(
                                                   Seconds{impl.options.drain_seconds});
    impl.progress_cv.WaitUntil(impl.mu, deadline,
                               [&impl]() GS_REQUIRES(impl.mu) { return impl.open_requests == 0; });
    impl.abort_streams = true;
    impl.WakeWaiters();
  }
  // Handlers woken above end their streams; the rest go when the I/O context stops.
  impl.http->StopAccepting();
  {
    MutexLock lock(impl.mu);
    impl.progress_cv.WaitFor(impl.mu, std::chrono::milliseconds(200),
                             [&impl]() GS_REQUIRES(impl.mu) { return impl.open_requests == 0; });
  }
  impl.http->Stop();
  {
    MutexLock lock(impl.mu);
    impl.stop_scheduler = true;
    impl.scheduler_cv.NotifyAll();
  }
  if (impl.scheduler.joinable()) impl.scheduler.join();
}

}  // namespace gpuscale::emulator
