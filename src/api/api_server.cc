#include "api/api_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

#include "api/api_handlers.h"
#include "api/auth.h"
#include "api/request_parsing.h"
#include "api/router.h"
#include "api/static_files.h"

namespace gpuscale::api {
namespace {

// Longer paths are refused before any routing: our names are short, and cpp-httplib's
// regex matching recurses once per character.
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
      {"PUT", "/v1/services/{name}/replicas", HandleSetReplicas},
      {"GET", "/v1/leases", HandleLeases},
      {"GET", "/v1/events", HandleEvents},
      {"GET", "/v1/events/stream", HandleEventStream},
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
      : daemon(daemon_api), options(std::move(server_options)) {
    for (const Route& route : Routes()) router.Add(route.method, route.pattern);
    stream_options.keepalive = options.sse_keepalive;
  }

  daemon::DaemonApi& daemon;
  const ApiServerOptions options;
  EventStreamOptions stream_options;
  Router router;
  httplib::Server http;
  std::thread listener;
  std::atomic<bool> listener_exited{false};
  std::atomic<bool> stopping{false};  // ends event streams
  std::atomic<int> port{0};
  bool started = false;  // owner thread only
  bool stopped = false;  // owner thread only
};

namespace {

using Impl = ApiServer::Impl;

// Answers a GET/HEAD outside the API from web_root; false when it is not a static file.
bool ServeStatic(const Impl& impl, const httplib::Request& req, httplib::Response& res) {
  if (impl.options.web_root.empty() || (req.method != "GET" && req.method != "HEAD") ||
      StartsWith(req.path, "/v1/")) {
    return false;
  }
  Result<StaticFile> file = ResolveStaticFile(impl.options.web_root, req.path);
  if (!file) return false;
  Result<std::string> content = ReadStaticFile(*file);
  if (!content) return false;
  res.status = 200;
  res.set_content(std::move(*content), file->content_type);
  return true;
}

// Everything a request must pass before its handler: path length, route, token. Runs
// before cpp-httplib reads the body, so unauthenticated clients cannot make it buffer one.
httplib::Server::HandlerResponse Gatekeeper(const Impl& impl, const httplib::Request& req,
                                            httplib::Response& res) {
  using httplib::Server;
  if (req.path.size() > kMaxPathBytes) {
    SendErrorBody(res, 404, "not_found", "no such path (longer than 2048 bytes)");
    return Server::HandlerResponse::Handled;
  }
  const RouteMatch match = impl.router.Match(req.method, req.path);
  // Static dashboard files hold no state and a browser cannot attach a bearer token to a
  // page load, so they are public; the API calls the dashboard makes carry the token.
  if (match.route < 0 && match.allow.empty() && ServeStatic(impl, req, res)) {
    return Server::HandlerResponse::Handled;
  }
  const bool public_route = match.route >= 0 && Routes()[match.route].access == Access::kPublic;
  if (!public_route && !impl.options.token.empty() &&
      !BearerTokenMatches(req.get_header_value("Authorization"), impl.options.token)) {
    res.set_header("WWW-Authenticate", "Bearer realm=\"gpuscale\"");
    SendErrorBody(res, 401, "unauthenticated",
                  req.has_header("Authorization")
                      ? "the bearer token is not valid"
                      : "this endpoint needs 'Authorization: Bearer <token>' (api.token)");
    return Server::HandlerResponse::Handled;
  }
  if (match.route >= 0) return Server::HandlerResponse::Unhandled;  // -> Execute
  if (!match.allow.empty()) {
    res.set_header("Allow", match.allow);
    SendErrorBody(
        res, 405, "method_not_allowed",
        fmt::format("{} is not allowed on {}; allowed: {}", req.method, req.path, match.allow));
  } else {
    SendErrorBody(res, 404, "not_found",
                  fmt::format("no such endpoint: {} {}", req.method, req.path));
  }
  return Server::HandlerResponse::Handled;
}

// Runs the matched route's handler (the body, if any, has been read).
void Execute(Impl& impl, const httplib::Request& req, httplib::Response& res) {
  const RouteMatch match = impl.router.Match(req.method, req.path);
  if (match.route < 0) {  // Gatekeeper answered already; not reached
    SendErrorBody(res, 404, "not_found", "no such endpoint");
    return;
  }
  HandlerContext ctx{impl.daemon, req, res, match.params, impl.stopping, impl.stream_options};
  Status status = Routes()[match.route].handler(ctx);
  if (!status) SendError(res, status.error());
}

// Bodies for the errors cpp-httplib answers itself (413, 400 for a bad request line...).
httplib::Server::HandlerResponse ErrorBody(const httplib::Request&, httplib::Response& res) {
  if (!res.body.empty() || res.status == 204) return httplib::Server::HandlerResponse::Unhandled;
  if (res.status == 413) {
    SendErrorBody(res, 413, "payload_too_large",
                  fmt::format("request body exceeds {} bytes", kMaxBodyBytes));
  } else if (res.status == 404) {
    SendErrorBody(res, 404, "not_found", "no such endpoint");
  } else {
    SendErrorBody(res, res.status, "bad_request", "malformed HTTP request");
  }
  return httplib::Server::HandlerResponse::Handled;
}

void InstallRoutes(Impl& impl) {
  impl.http.set_pre_routing_handler([&impl](const httplib::Request& req, httplib::Response& res) {
    return Gatekeeper(impl, req, res);
  });
  // One catch-all per method: routing happens in Router (which knows 404 from 405).
  const auto execute = [&impl](const httplib::Request& req, httplib::Response& res) {
    Execute(impl, req, res);
  };
  impl.http.Get(".*", execute);
  impl.http.Post(".*", execute);
  impl.http.Put(".*", execute);
  impl.http.Delete(".*", execute);
  impl.http.Patch(".*", execute);
  impl.http.Options(".*", execute);
  impl.http.set_error_handler(httplib::Server::HandlerWithResponse(ErrorBody));
  impl.http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        SendErrorBody(res, 500, "internal", "internal error in the API server; see the log");
      });
}

Status ValidateOptions(const ApiServerOptions& options) {
  if (options.port < 0 || options.port > 65535) {
    return InvalidArgument(fmt::format("expected a port in 0..65535, got {}", options.port),
                           "port");
  }
  if (options.http_threads < 1) {
    return InvalidArgument(fmt::format("expected >= 1, got {}", options.http_threads),
                           "http_threads");
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

Result<int> ApiServer::Start() {
  Impl& impl = *impl_;
  if (impl.started) return FailedPrecondition("the API server was already started");
  GS_RETURN_IF_ERROR(ValidateOptions(impl.options));
  const size_t threads = static_cast<size_t>(impl.options.http_threads);
  impl.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  impl.http.set_payload_max_length(kMaxBodyBytes);
  // An idle keep-alive connection holds a worker until this passes, which bounds Stop().
  impl.http.set_keep_alive_timeout(1);
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, which would let a second
  // daemon bind the same port silently and take half of the connections.
  impl.http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  InstallRoutes(impl);
  const int port =
      impl.options.port == 0
          ? impl.http.bind_to_any_port(impl.options.host)
          : (impl.http.bind_to_port(impl.options.host, impl.options.port) ? impl.options.port : -1);
  if (port <= 0) {
    return Unavailable(fmt::format("cannot listen on {}:{}: the port is in use or the host is "
                                   "not an address of this machine",
                                   impl.options.host, impl.options.port),
                       "api.listen");
  }
  impl.started = true;
  impl.port = port;
  Impl* raw = &impl;
  impl.listener = std::thread([raw] {
    raw->http.listen_after_bind();
    raw->listener_exited = true;
  });
  // cpp-httplib 0.11's stop() does nothing until the accept loop runs, so a Stop() right
  // after Start() would hang the join: wait for the loop (connections queue meanwhile).
  while (!impl.http.is_running() && !impl.listener_exited) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return port;
}

void ApiServer::Stop() {
  Impl& impl = *impl_;
  if (!impl.started || impl.stopped) return;
  impl.stopped = true;
  impl.stopping = true;  // event streams end at their next poll
  impl.http.stop();
  if (impl.listener.joinable()) impl.listener.join();  // joins the worker pool too
  impl.port = 0;
}

}  // namespace gpuscale::api
