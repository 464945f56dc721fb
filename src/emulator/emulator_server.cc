#include "emulator/emulator_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "emulator/openai_protocol.h"
#include "emulator/vllm_metrics.h"

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
  explicit Impl(const EmulatorOptions& opts) : options(opts), engine(ServedEngine(opts.engine)) {}

  Seconds Now() const { return SteadyClock::now() - epoch; }
  bool Loaded() const { return Now().count() >= options.startup_seconds; }

  const EmulatorOptions options;
  const SteadyClock::time_point epoch = SteadyClock::now();
  const int64_t created_unix_seconds = static_cast<int64_t>(SystemClock::Instance().Now().count());
  httplib::Server http;
  int port = 0;
  std::thread listener;
  std::thread scheduler;
  std::atomic<uint64_t> next_response_id{1};
  std::atomic<bool> listener_exited{false};

  mutable std::mutex mu;
  std::condition_variable progress_cv;   // handlers: engine progress, abort_streams
  std::condition_variable scheduler_cv;  // scheduler: a new step may have started, stop
  BatchEngine engine;                    // guarded by mu
  int open_requests = 0;                 // guarded by mu: submitted, response not yet released
  bool draining = false;                 // guarded by mu: Shutdown() began; new requests get 503
  bool abort_streams = false;            // guarded by mu: drain time is over; handlers give up
  bool stop_scheduler = false;           // guarded by mu
  bool shut_down = false;                // guarded by mu
};

namespace {

using Impl = EmulatorServer::Impl;

void SendError(httplib::Response& res, int status, std::string_view message, std::string_view type,
               std::string_view param = {}) {
  res.status = status;
  res.set_content(ErrorBody(message, type, param, status), "application/json");
}

// Sleeps until the step in progress ends, advances the engine and wakes the handlers.
void RunScheduler(Impl& impl) {
  std::unique_lock lock(impl.mu);
  while (!impl.stop_scheduler) {
    impl.engine.Advance(impl.Now());
    impl.progress_cv.notify_all();
    if (std::optional<Seconds> end = impl.engine.NextStepEnd()) {
      impl.scheduler_cv.wait_until(lock,
                                   impl.epoch + std::chrono::ceil<SteadyClock::duration>(*end));
    } else {
      impl.scheduler_cv.wait(lock);
    }
  }
}

// Ends a request's life in the engine once its response is done (or abandoned).
void ReleaseRequest(Impl& impl, RequestId id) {
  std::lock_guard lock(impl.mu);
  impl.engine.Forget(id, impl.Now());
  --impl.open_requests;
  impl.progress_cv.notify_all();  // Shutdown() waits for open_requests to reach 0
}

bool Done(const RequestProgress* progress) {
  return progress == nullptr || progress->state == RequestState::kFinished ||
         progress->state == RequestState::kCancelled;
}

// Streams one event per token as the engine produces them. Called by cpp-httplib on the
// connection's worker thread until it calls sink.done() or returns false (which ends the
// stream without [DONE]: the client left, or the drain time ran out).
struct TokenStreamer {
  Impl* impl;
  RequestId id;
  ResponseHeader header;
  CompletionRequest request;
  int32_t sent = 0;

  bool operator()(size_t /*offset*/, httplib::DataSink& sink) {
    std::unique_lock lock(impl->mu);
    impl->progress_cv.wait(lock, [&] {
      const RequestProgress* p = impl->engine.Find(id);
      return impl->abort_streams || Done(p) || p->tokens_generated > sent;
    });
    const RequestProgress* progress = impl->engine.Find(id);
    const int32_t generated = progress ? progress->tokens_generated : sent;
    const bool finished = progress && progress->state == RequestState::kFinished;
    const bool aborted = impl->abort_streams;
    lock.unlock();
    std::string events;
    for (; sent < generated; ++sent) {
      events += StreamTokenEvent(header, sent, sent + 1 == request.max_tokens);
    }
    if (finished) {
      if (request.include_usage) {
        events += StreamUsageEvent(header, request.prompt_tokens, generated);
      }
      events += StreamDoneEvent();
    }
    if (!events.empty() && !sink.write(events.data(), events.size())) return false;
    if (finished) {
      sink.done();
      return true;
    }
    return !aborted && progress != nullptr;
  }
};

// Blocks until the request finishes, then answers with the whole completion.
void AnswerWhole(Impl& impl, RequestId id, const ResponseHeader& header,
                 const CompletionRequest& request, httplib::Response& res) {
  std::unique_lock lock(impl.mu);
  impl.progress_cv.wait(lock, [&] { return impl.abort_streams || Done(impl.engine.Find(id)); });
  const RequestProgress* progress = impl.engine.Find(id);
  const bool finished = progress && progress->state == RequestState::kFinished;
  const int32_t generated = progress ? progress->tokens_generated : 0;
  lock.unlock();
  ReleaseRequest(impl, id);
  if (!finished) {
    SendError(res, 503, "the server is shutting down", "ServiceUnavailableError");
    return;
  }
  res.set_content(CompletionResponseBody(header, request.prompt_tokens, generated),
                  "application/json");
}

// Admission checks shared by both completion endpoints; false when `res` holds the answer.
bool Admit(Impl& impl, const httplib::Request& req, Endpoint endpoint, httplib::Response& res,
           CompletionRequest& request) {
  if (!impl.Loaded()) {
    SendError(res, 503, "the model is still loading", "ServiceUnavailableError");
    return false;
  }
  Result<CompletionRequest> parsed = ParseCompletionRequest(req.body, endpoint);
  if (!parsed) {
    SendError(res, 400, parsed.error().ToString(), "BadRequestError", parsed.error().field);
    return false;
  }
  if (!parsed->model.empty() && parsed->model != impl.options.model_name) {
    SendError(res, 404, fmt::format("The model `{}` does not exist.", parsed->model),
              "NotFoundError", "model");
    return false;
  }
  request = std::move(*parsed);
  return true;
}

void HandleCompletion(Impl& impl, const httplib::Request& req, Endpoint endpoint,
                      httplib::Response& res) {
  CompletionRequest request;
  if (!Admit(impl, req, endpoint, res, request)) return;
  RequestId id = 0;
  {
    std::lock_guard lock(impl.mu);
    if (impl.draining) {
      SendError(res, 503, "the server is shutting down", "ServiceUnavailableError");
      return;
    }
    Result<RequestId> submitted =
        impl.engine.Submit(request.prompt_tokens, request.max_tokens, impl.Now());
    if (!submitted) {
      SendError(res, 400, submitted.error().ToString(), "BadRequestError", submitted.error().field);
      return;
    }
    id = *submitted;
    ++impl.open_requests;
    impl.scheduler_cv.notify_one();
  }
  const bool chat = endpoint == Endpoint::kChatCompletions;
  ResponseHeader header{fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", impl.next_response_id++),
                        static_cast<int64_t>(SystemClock::Instance().Now().count()),
                        impl.options.model_name, endpoint};
  if (!request.stream) {
    AnswerWhole(impl, id, header, request, res);
    return;
  }
  Impl* impl_ptr = &impl;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream",
                                   TokenStreamer{impl_ptr, id, std::move(header), request},
                                   [impl_ptr, id](bool) { ReleaseRequest(*impl_ptr, id); });
}

void HandleHealth(Impl& impl, httplib::Response& res) {
  bool draining = false;
  {
    std::lock_guard lock(impl.mu);
    draining = impl.draining;
  }
  if (draining || !impl.Loaded()) {
    res.status = 503;
    res.set_content(draining ? "draining\n" : "loading\n", "text/plain");
  }
}

void HandleModels(Impl& impl, httplib::Response& res) {
  if (!impl.Loaded()) {
    SendError(res, 503, "the model is still loading", "ServiceUnavailableError");
    return;
  }
  res.set_content(ModelListBody(impl.options.model_name, impl.created_unix_seconds,
                                ServedMaxModelLen(impl.options.engine)),
                  "application/json");
}

void HandleMetrics(Impl& impl, httplib::Response& res) {
  EngineStats stats;
  {
    std::lock_guard lock(impl.mu);
    impl.engine.Advance(impl.Now());
    stats = impl.engine.stats();
  }
  res.set_content(RenderVllmMetrics(stats, impl.options.model_name),
                  "text/plain; version=0.0.4; charset=utf-8");
}

void InstallRoutes(Impl& impl) {
  impl.http.Post("/v1/completions", [&impl](const httplib::Request& req, httplib::Response& res) {
    HandleCompletion(impl, req, Endpoint::kCompletions, res);
  });
  impl.http.Post("/v1/chat/completions",
                 [&impl](const httplib::Request& req, httplib::Response& res) {
                   HandleCompletion(impl, req, Endpoint::kChatCompletions, res);
                 });
  impl.http.Get("/v1/models", [&impl](const httplib::Request&, httplib::Response& res) {
    HandleModels(impl, res);
  });
  impl.http.Get("/health", [&impl](const httplib::Request&, httplib::Response& res) {
    HandleHealth(impl, res);
  });
  impl.http.Get("/metrics", [&impl](const httplib::Request&, httplib::Response& res) {
    HandleMetrics(impl, res);
  });
  impl.http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        SendError(res, 500, "internal error in the emulator", "InternalServerError");
      });
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
  if (options.http_threads < 1 || options.http_threads > 4096) {
    return InvalidArgument(fmt::format("expected 1..4096, got {}", options.http_threads),
                           "--http-threads");
  }
  if (options.model_name.empty()) return InvalidArgument("expected a name", "--model");
  return OkStatus();
}

Result<std::unique_ptr<EmulatorServer>> EmulatorServer::Start(const EmulatorOptions& options) {
  GS_RETURN_IF_ERROR(ValidateEmulatorOptions(options));
  auto impl = std::make_unique<Impl>(options);
  const size_t threads = static_cast<size_t>(options.http_threads);
  impl->http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  impl->http.set_tcp_nodelay(true);  // one small event per token: no Nagle delay
  // Idle keep-alive connections hold a worker until this passes, which bounds Shutdown().
  impl->http.set_keep_alive_timeout(1);
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, which would let a second
  // emulator bind the same port silently and steal half of the connections.
  impl->http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  InstallRoutes(*impl);
  impl->port = options.port == 0
                   ? impl->http.bind_to_any_port(options.host)
                   : (impl->http.bind_to_port(options.host, options.port) ? options.port : -1);
  if (impl->port <= 0) {
    return Unavailable(fmt::format("cannot listen on {}:{} (address in use or not local?)",
                                   options.host, options.port),
                       "--port");
  }
  Impl* raw = impl.get();
  impl->listener = std::thread([raw] {
    raw->http.listen_after_bind();
    raw->listener_exited = true;
  });
  // cpp-httplib 0.11's stop() does nothing until the accept loop runs, so a Shutdown() right
  // after Start() would hang the join: wait for the loop (connections queue meanwhile).
  while (!impl->http.is_running() && !impl->listener_exited)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  impl->scheduler = std::thread([raw] { RunScheduler(*raw); });
  return std::unique_ptr<EmulatorServer>(new EmulatorServer(std::move(impl)));
}

EmulatorServer::EmulatorServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EmulatorServer::~EmulatorServer() { Shutdown(); }

int EmulatorServer::port() const { return impl_->port; }

EngineStats EmulatorServer::Stats() const {
  std::lock_guard lock(impl_->mu);
  impl_->engine.Advance(impl_->Now());
  return impl_->engine.stats();
}

void EmulatorServer::Shutdown() {
  Impl& impl = *impl_;
  {
    std::unique_lock lock(impl.mu);
    if (impl.shut_down) return;
    impl.shut_down = true;
    impl.draining = true;
    // cpp-httplib ends chunked streams as soon as its listener stops, so in-flight requests
    // are drained first, while the listener still runs (new requests get 503 meanwhile).
    const auto deadline = SteadyClock::now() + std::chrono::ceil<SteadyClock::duration>(
                                                   Seconds{impl.options.drain_seconds});
    impl.progress_cv.wait_until(lock, deadline, [&] { return impl.open_requests == 0; });
    impl.abort_streams = true;
    impl.progress_cv.notify_all();
  }
  impl.http.stop();
  if (impl.listener.joinable()) impl.listener.join();  // joins the worker pool too
  {
    std::lock_guard lock(impl.mu);
    impl.stop_scheduler = true;
    impl.scheduler_cv.notify_all();
  }
  if (impl.scheduler.joinable()) impl.scheduler.join();
}

}  // namespace gpuscale::emulator
