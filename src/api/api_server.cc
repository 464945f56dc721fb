#include "api/api_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

#include "api/api_handlers.h"
#include "api/auth.h"
#include "api/event_hub.h"
#include "api/http_message.h"
#include "api/request_parsing.h"
#include "api/router.h"
#include "api/static_files.h"
#include "net/http_server.h"

namespace gpuscale::api {
namespace {

namespace asio = net::asio;
namespace beast = net::beast;
namespace http = net::http;
using net::kTuple;

// Longer paths are refused before any routing: our names are short.
constexpr size_t kMaxPathBytes = 2048;

enum class Access { kToken, kPublic };

struct Route {
  const char* method;
  const char* pattern;
  Handler handler;
  Access access = Access::kToken;
};

// The API's routes (docs/api.md documents each).
const std::vector<Route>& Routes() {
  static const std::vector<Route> routes = {
      {"GET", "/healthz", HandleHealthz, Access::kPublic},
      {"GET", "/readyz", HandleReadyz, Access::kPublic},
      {"GET", "/metrics", HandleMetrics},
      {"GET", "/v1/gpus", HandleGpus},
      {"GET", "/v1/gpus/history", HandleGpuHistory},
      {"GET", "/v1/services", HandleListServices},
      {"POST", "/v1/services", HandleCreateService},
      {"GET", "/v1/services/{name}", HandleGetService},
      {"PUT", "/v1/services/{name}", HandleUpdateService},
      {"DELETE", "/v1/services/{name}", HandleDeleteService},
      {"GET", "/v1/services/{name}/rules", HandleListRules},
      {"POST", "/v1/services/{name}/rules", HandleAddRule},
      {"DELETE", "/v1/services/{name}/rules", HandleDeleteRuleByQuery},
      {"GET", "/v1/services/{name}/rules/{id}", HandleGetRule},
      {"DELETE", "/v1/services/{name}/rules/{id}", HandleDeleteRule},
      {"GET", "/v1/services/{name}/replicas", HandleGetReplicas},
      {"GET", "/v1/services/{name}/history", HandleServiceHistory},
      {"PUT", "/v1/services/{name}/replicas", HandleSetReplicas},
      {"POST", "/v1/replicas/{id}/preempt", HandlePreemptReplica},
      {"GET", "/v1/leases", HandleLeases},
      {"GET", "/v1/events", HandleEvents},
      {"GET", "/v1/events/stream", HandleEventStream},
      {"GET", "/v1/events/kinds", HandleEventKinds},
      {"GET", "/v1/tasks", HandleListTasks},
      {"POST", "/v1/tasks", HandleSubmitTask},
      {"GET", "/v1/tasks/{id}", HandleGetTask},
      {"DELETE", "/v1/tasks/{id}", HandleCancelTask},
      {"GET", "/v1/tasks/{id}/experiments", HandleListTaskExperiments},
      {"GET", "/v1/experiments/{id}", HandleGetExperiment},
  };
  return routes;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

struct ApiServer::Impl {
  Impl(daemon::DaemonApi& daemon_api, ApiServerOptions server_options)
      : daemon(daemon_api), options(std::move(server_options)), hub(daemon_api, Seconds{0.1}) {
    for (const Route& route : Routes()) router.Add(route.method, route.pattern);
    stream_options.poll = Seconds{0};  // never block: the hub says when to poll
    stream_options.keepalive = options.sse_keepalive;
    stream_options.services = [this] { return hub.Services(stream_options.stats_interval / 2); };
  }

  daemon::DaemonApi& daemon;
  const ApiServerOptions options;
  EventStreamOptions stream_options;
  Router router;
  EventHub hub;
  // Handlers run on `workers`; event streams poll on `stream_workers`, so that a burst of
  // stream wake-ups (every stream on each new event) never queues ahead of requests.
  std::unique_ptr<asio::thread_pool> workers;
  std::unique_ptr<asio::thread_pool> stream_workers;
  std::unique_ptr<net::HttpServer> http;
  std::atomic<bool> stopping{false};  // ends event streams
  std::atomic<int> streams{0};        // open event streams
  std::atomic<int> port{0};
  bool started = false;  // owner thread only
  bool stopped = false;  // owner thread only
};

namespace {

using Impl = ApiServer::Impl;

// Runs `work` on `pool` and resumes the caller on its own executor when it is done.
template <typename F>
asio::awaitable<void> OnPool(asio::thread_pool& pool, F& work) {
  auto job = [&work]() -> asio::awaitable<void> {
    work();
    co_return;
  };
  auto done = asio::co_spawn(pool, job, asio::use_awaitable);
  co_await std::move(done);
}

// Static dashboard files: GET/HEAD outside /v1/ that name a file under web_root.
bool IsStaticRequest(const Impl& impl, std::string_view method, std::string_view path) {
  return !impl.options.web_root.empty() && (method == "GET" || method == "HEAD") &&
         !StartsWith(path, "/v1/") && ResolveStaticFile(impl.options.web_root, path).has_value();
}

net::StringResponse ToHttp(ApiResponse& api, unsigned version) {
  net::StringResponse res{static_cast<http::status>(api.status), version};
  for (auto& [name, value] : api.headers) res.set(name, value);
  if (!api.content_type.empty()) res.set(http::field::content_type, api.content_type);
  res.body() = std::move(api.body);
  return res;
}

net::StringResponse ErrorResponse(int status, std::string_view code, std::string_view message,
                                  unsigned version) {
  ApiResponse api;
  SendErrorBody(api, status, code, message);
  return ToHttp(api, version);
}

// Everything a request must pass before its body is read: path, route, token. Unauthenticated
// clients cannot make the server buffer a body. Runs on the connection's I/O thread: no blocking
// beyond the stat of a static file.
std::optional<net::StringResponse> Gate(const Impl& impl, const net::Request& header) {
  const unsigned version = header.version();
  const std::string method(header.method_string());
  Result<RequestTarget> target = ParseTarget(header.target());
  if (!target) {
    ApiResponse bad;
    SendError(bad, target.error());  // 400 naming the field "target"
    return ToHttp(bad, version);
  }
  const std::string& path = target->path;
  if (path.size() > kMaxPathBytes) {
    return ErrorResponse(404, "not_found", "no such path (longer than 2048 bytes)", version);
  }
  const RouteMatch match = impl.router.Match(method, path);
  // Static dashboard files hold no state and a browser cannot attach a bearer token to a
  // page load, so they are public; the API calls the dashboard makes carry the token.
  if (match.route < 0 && match.allow.empty() && IsStaticRequest(impl, method, path)) {
    return std::nullopt;
  }
  const bool public_route = match.route >= 0 && Routes()[match.route].access == Access::kPublic;
  if (!public_route && !impl.options.token.empty()) {
    const auto authorization = header.find(http::field::authorization);
    if (authorization == header.end() ||
        !BearerTokenMatches(authorization->value(), impl.options.token)) {
      net::StringResponse res = ErrorResponse(
          401, "unauthenticated",
          authorization != header.end()
              ? "the bearer token is not valid"
              : "this endpoint needs 'Authorization: Bearer <token>' (api.token)",
          version);
      res.set(http::field::www_authenticate, "Bearer realm=\"gpuscale\"");
      return res;
    }
  }
  if (match.route >= 0) return std::nullopt;
  if (!match.allow.empty()) {
    net::StringResponse res = ErrorResponse(
        405, "method_not_allowed",
        fmt::format("{} is not allowed on {}; allowed: {}", method, path, match.allow), version);
    res.set(http::field::allow, match.allow);
    return res;
  }
  return ErrorResponse(404, "not_found", fmt::format("no such endpoint: {} {}", method, path),
                       version);
}

ApiRequest ToApiRequest(net::Request& req) {
  ApiRequest api;
  api.method = std::string(req.method_string());
  Result<RequestTarget> target = ParseTarget(req.target());  // Gate parsed it once already
  if (target) {
    api.path = std::move(target->path);
    api.params = std::move(target->params);
  }
  for (const auto& field : req) {
    api.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  api.body = std::move(req.body());
  return api;
}

// Runs the request's handler (or serves its static file) on a worker thread.
void Execute(Impl& impl, const ApiRequest& req, ApiResponse& res) {
  try {
    const RouteMatch match = impl.router.Match(req.method, req.path);
    if (match.route < 0) {  // Gate let it through: a static file
      Result<StaticFile> file = ResolveStaticFile(impl.options.web_root, req.path);
      Result<std::string> content =
          file ? ReadStaticFile(*file) : Result<std::string>(Unexpected<Error>(file.error()));
      if (!content) {
        SendErrorBody(res, 404, "not_found", fmt::format("no such file: {}", req.path));
        return;
      }
      res.status = 200;
      res.SetContent(std::move(*content), file->content_type);
      return;
    }
    HandlerContext ctx{impl.daemon, req, res, match.params, impl.stream_options};
    Status status = Routes()[match.route].handler(ctx);
    if (!status) SendError(res, status.error());
  } catch (...) {
    res = ApiResponse{};
    SendErrorBody(res, 500, "internal", "internal error in the API server; see the log");
  }
}

// Sends an event stream: the headers, then the stream's events, keepalives and gateway
// stats as HTTP chunks, polled when the hub says something arrived and on a short timer,
// until the client leaves (a write fails) or the server stops (the stream's end is sent).
asio::awaitable<bool> ServeEventStream(Impl& impl, beast::tcp_stream& stream,
                                       const net::Request& req, ApiResponse& head) {
  http::response<http::empty_body> res{http::status::ok, req.version()};
  for (auto& [name, value] : head.headers) res.set(name, value);
  res.set(http::field::content_type, head.content_type);
  res.chunked(true);
  res.keep_alive(false);  // the stream ends only when one side leaves
  http::response_serializer<http::empty_body> serializer{res};
  stream.expires_after(net::kClientWriteTimeout);
  auto [hec, hn] = co_await http::async_write_header(stream, serializer, kTuple);
  if (hec) co_return false;

  auto timer = std::make_shared<asio::steady_timer>(stream.get_executor());
  auto woken = std::make_shared<std::atomic<bool>>(false);
  struct Subscription {
    EventHub& hub;
    int64_t handle;
    ~Subscription() { hub.Unsubscribe(handle); }
  } subscription{impl.hub, impl.hub.Subscribe([timer, woken] {
                   woken->store(true);
                   asio::post(timer->get_executor(), [timer] { timer->cancel(); });
                 })};
  const std::shared_ptr<EventStream> events = head.stream;
  Seconds tick = std::min(impl.options.sse_keepalive, Seconds{1});
  if (impl.stream_options.stats_interval.count() > 0) {
    tick = std::min(tick, impl.stream_options.stats_interval);
  }
  Result<std::string> text;
  auto poll = [&] { text = events->Poll(); };
  while (!impl.stopping.load()) {
    woken->store(false);
    co_await OnPool(*impl.stream_workers, poll);
    if (!text) co_return false;  // the event store failed: cut the stream
    if (!text->empty()) {
      stream.expires_after(net::kClientWriteTimeout);
      const auto chunk = http::make_chunk(asio::buffer(*text));
      auto [ec, n] = co_await asio::async_write(stream, chunk, kTuple);
      if (ec) co_return false;  // the client left
    }
    if (woken->load() || impl.stopping.load()) continue;
    timer->expires_after(net::Ticks(tick));
    [[maybe_unused]] auto [tec] = co_await timer->async_wait(kTuple);  // woken or expired
  }
  stream.expires_after(net::kClientWriteTimeout);
  const auto last = http::make_chunk_last();
  [[maybe_unused]] auto [lec, ln] = co_await asio::async_write(stream, last, kTuple);
  co_return false;
}

asio::awaitable<bool> Handle(Impl& impl, beast::tcp_stream& stream, net::Request& req) {
  ApiRequest api_req = ToApiRequest(req);
  ApiResponse api_res;
  auto run = [&] { Execute(impl, api_req, api_res); };
  co_await OnPool(*impl.workers, run);
  if (api_res.stream) {
    if (++impl.streams > impl.options.max_event_streams) {
      --impl.streams;
      net::StringResponse busy = ErrorResponse(
          503, "unavailable",
          fmt::format("{} event streams are open, the most this server keeps "
                      "(api max_event_streams); retry later",
                      impl.options.max_event_streams),
          req.version());
      busy.set(http::field::retry_after, "5");
      co_return co_await net::WriteResponse(stream, req, busy);
    }
    struct Release {
      std::atomic<int>& streams;
      ~Release() { --streams; }
    } release{impl.streams};
    co_return co_await ServeEventStream(impl, stream, req, api_res);
  }
  net::StringResponse res = ToHttp(api_res, req.version());
  co_return co_await net::WriteResponse(stream, req, res);
}

// The API's refusals of what the server layer rejects itself (malformed, too large).
net::StringResponse Reject(const net::Request& partial, http::status status,
                           const std::string& message) {
  const int code = static_cast<int>(status);
  const char* name = code == 413   ? "payload_too_large"
                     : code == 431 ? "request_header_fields_too_large"
                                   : "bad_request";
  return ErrorResponse(code, name, message, partial.version() == 10 ? 10 : 11);
}

Status ValidateOptions(const ApiServerOptions& options) {
  if (options.port < 0 || options.port > 65535) {
    return InvalidArgument(fmt::format("expected a port in 0..65535, got {}", options.port),
                           "port");
  }
  const std::pair<const char*, int> counts[] = {
      {"io_threads", options.io_threads},
      {"worker_threads", options.worker_threads},
      {"max_connections", options.max_connections},
      {"max_event_streams", options.max_event_streams},
  };
  for (const auto& [field, value] : counts) {
    if (value < 1) return InvalidArgument(fmt::format("expected >= 1, got {}", value), field);
  }
  std::error_code ec;
  if (!options.web_root.empty() && !std::filesystem::is_directory(options.web_root, ec)) {
    return InvalidArgument(fmt::format("'{}' is not a directory", options.web_root), "web_root");
  }
  return OkStatus();
}

}  // namespace

ApiServer::ApiServer(daemon::DaemonApi& daemon, ApiServerOptions options)
    : impl_(std::make_unique<Impl>(daemon, std::move(options))) {}

ApiServer::~ApiServer() { Stop(); }

int ApiServer::port() const { return impl_->port.load(); }

int ApiServer::event_streams() const { return impl_->streams.load(); }

Result<int> ApiServer::Start() {
  Impl& impl = *impl_;
  if (impl.started) return FailedPrecondition("the API server was already started");
  GS_RETURN_IF_ERROR(ValidateOptions(impl.options));
  net::HttpServerOptions http_options;
  http_options.host = impl.options.host;
  http_options.port = impl.options.port;
  http_options.field = "api.listen";
  http_options.threads = impl.options.io_threads;
  http_options.max_connections = impl.options.max_connections;
  http_options.max_connections_per_client = impl.options.max_connections_per_client;
  http_options.max_body_bytes = static_cast<int64_t>(kMaxBodyBytes);
  http_options.header_timeout = impl.options.header_timeout;
  http_options.idle_timeout = impl.options.idle_timeout;
  Impl* raw = &impl;
  http_options.gate = [raw](const net::Request& header) { return Gate(*raw, header); };
  auto handler = [raw](beast::tcp_stream& stream, net::Request& req) {
    return Handle(*raw, stream, req);
  };
  impl.workers = std::make_unique<asio::thread_pool>(impl.options.worker_threads);
  impl.stream_workers = std::make_unique<asio::thread_pool>(2);
  Result<std::unique_ptr<net::HttpServer>> http =
      net::HttpServer::Start(std::move(http_options), handler, Reject);
  if (!http) {
    impl.workers->join();
    impl.stream_workers->join();
    return Unexpected<Error>(http.error());
  }
  impl.http = std::move(*http);
  impl.started = true;
  impl.port = impl.http->port();
  return impl.port.load();
}

void ApiServer::Stop() {
  Impl& impl = *impl_;
  if (!impl.started || impl.stopped) return;
  impl.stopped = true;
  impl.http->StopAccepting();
  impl.stopping = true;
  impl.hub.Stop();  // wakes every stream: each sends its end and returns
  for (int i = 0; i < 200 && impl.streams.load() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  impl.http->Stop();  // cuts what is left (requests in flight, streams that did not end)
  impl.workers->stop();
  impl.workers->join();
  impl.stream_workers->stop();
  impl.stream_workers->join();
  impl.http.reset();  // destroys the suspended connections, closing their sockets
  impl.port = 0;
}

}  // namespace gpuscale::api
