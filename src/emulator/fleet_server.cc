#include "emulator/fleet_server.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "emulator/batch_engine.h"
#include "emulator/vllm_metrics.h"
#include "net/http_server.h"

namespace gpuscale::emulator {
namespace {

namespace asio = net::asio;
namespace beast = net::beast;
namespace http = net::http;
using asio::awaitable;
using json = nlohmann::json;
using net::kTuple;
using net::Request;
using net::StringResponse;
using net::tcp;

// A replica's KV cache as the metrics report it: a running request holds 2,048 tokens of a
// 65,536-token cache (the emulator's default size).
constexpr int64_t kKvTokensPerRequest = 2048;
constexpr int64_t kKvCapacityTokens = 65536;

// One emulated replica: its listener, the load it reports, and its /metrics body (rendered
// once per load change: a fleet's scrapes must not cost the fleet a render each).
struct Replica {
  Replica(asio::io_context& ioc, std::string replica_id) : acceptor(ioc), id(std::move(replica_id)) {}

  tcp::acceptor acceptor;
  const std::string id;
  int port = 0;
  Mutex mu;
  int running GS_GUARDED_BY(mu) = 0;
  int waiting GS_GUARDED_BY(mu) = 0;
  Seconds metrics_delay GS_GUARDED_BY(mu){0};
  std::string metrics GS_GUARDED_BY(mu);
  bool removed GS_GUARDED_BY(mu) = false;
};

// Accepts that fail on any replica's port (EMFILE/ENFILE when the fleet runs out of
// descriptors): counted, and logged once per burst -- the first failure, and the first
// accept after it -- not once per port and retry.
class AcceptFailures {
 public:
  explicit AcceptFailures(std::function<void(std::string_view)> log) : log_(std::move(log)) {}

  void Failed(const Replica& replica, const boost::system::error_code& ec) {
    ++total_;
    MutexLock lock(mu_);
    if (in_burst_++ > 0) return;
    failing_ = true;
    Log(fmt::format(
        "replica {} (port {}): accept failed: {}; retrying every {} ms (the fleet holds a "
        "descriptor per replica and per connection: raise the open-files limit or run fewer "
        "replicas)",
        replica.id, replica.port, ec.message(), kRetry.count()));
  }

  // After every accept that succeeded; cheap unless a burst of failures just ended.
  void Accepted() {
    if (!failing_.load(std::memory_order_relaxed)) return;
    MutexLock lock(mu_);
    if (in_burst_ == 0) return;
    Log(fmt::format("accepting again after {} failed accepts", in_burst_));
    in_burst_ = 0;
    failing_ = false;
  }

  int64_t total() const { return total_.load(); }

  static constexpr std::chrono::milliseconds kRetry{100};

 private:
  void Log(const std::string& message) {
    if (log_) {
      log_(message);
    } else {
      std::fprintf(stderr, "gpuscale fleet: %s\n", message.c_str());
    }
  }

  const std::function<void(std::string_view)> log_;
  std::atomic<int64_t> total_{0};
  std::atomic<bool> failing_{false};  // a burst is under way (fast path of Accepted)
  Mutex mu_;
  int64_t in_burst_ GS_GUARDED_BY(mu_) = 0;  // failures since the last accept
};

std::string RenderLoad(int running, int waiting, const std::string& model) {
  EngineStats stats;
  stats.running = running;
  stats.waiting = waiting;
  stats.kv_capacity_tokens = kKvCapacityTokens;
  stats.kv_used_tokens = std::min(kKvCapacityTokens, kKvTokensPerRequest * running);
  return RenderVllmMetrics(stats, model);
}

StringResponse Reply(http::status status, std::string body, std::string_view type) {
  StringResponse res{status, 11};
  res.set(http::field::content_type, type);
  res.body() = std::move(body);
  return res;
}

StringResponse JsonError(http::status status, std::string_view message, std::string_view field) {
  return Reply(status, json{{"error", message}, {"field", field}}.dump(), "application/json");
}

// One connection to a replica's port: /health and /metrics, kept alive.
awaitable<void> ReplicaSession(std::shared_ptr<Replica> replica, tcp::socket socket) {
  boost::system::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);  // as net::HttpServer: no Nagle delay
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (;;) {
    stream.expires_after(std::chrono::seconds(30));
    Request req;
    auto [ec, n] = co_await http::async_read(stream, buffer, req, kTuple);
    if (ec) co_return;
    const std::string_view target(req.target().data(), req.target().size());
    if (target == "/metrics") {
      Seconds delay{0};
      {
        MutexLock lock(replica->mu);
        delay = replica->metrics_delay;
      }
      if (delay > Seconds{0}) {  // a straggler: answers late, with the load as it is then
        asio::steady_timer late(stream.get_executor(),
                                std::chrono::duration_cast<std::chrono::nanoseconds>(delay));
        co_await late.async_wait(kTuple);
      }
    }
    StringResponse res;
    {
      MutexLock lock(replica->mu);
      if (replica->removed) co_return;
      res = target == "/health"    ? Reply(http::status::ok, "", "text/plain")
            : target == "/metrics" ? Reply(http::status::ok, replica->metrics,
                                           "text/plain; version=0.0.4; charset=utf-8")
                                   : Reply(http::status::not_found, "not found\n", "text/plain");
    }
    const bool sent = co_await net::WriteResponse(stream, req, res);
    if (!sent || !req.keep_alive()) co_return;
  }
}

awaitable<void> AcceptLoop(std::shared_ptr<Replica> replica,
                           std::shared_ptr<AcceptFailures> failures) {
  for (;;) {
    auto [ec, socket] = co_await replica->acceptor.async_accept(kTuple);
    if (ec == asio::error::operation_aborted || !replica->acceptor.is_open()) {
      co_return;  // closed: the replica was removed, or the fleet stops
    }
    if (ec) {
      // EMFILE, ENFILE, a connection reset in the backlog: the next accept may succeed once
      // descriptors free up. Giving up would leave the port listening with nobody accepting,
      // every scrape of it a timeout; spinning would burn a core.
      failures->Failed(*replica, ec);
      asio::steady_timer pause(replica->acceptor.get_executor(), AcceptFailures::kRetry);
      co_await pause.async_wait(kTuple);
      continue;
    }
    failures->Accepted();
    asio::co_spawn(replica->acceptor.get_executor(), ReplicaSession(replica, std::move(socket)),
                   asio::detached);
  }
}

}  // namespace

struct FleetServer::Impl {
  explicit Impl(FleetOptions o)
      : options(std::move(o)), accept_failures(std::make_shared<AcceptFailures>(options.log)) {}

  Result<int> Add(const std::string& id) {
    if (id.empty()) return InvalidArgument("expected a replica id", "id");
    MutexLock lock(mu);
    if (auto it = replicas.find(id); it != replicas.end()) return it->second->port;
    auto replica = std::make_shared<Replica>(http->NextContext(), id);
    boost::system::error_code ec;
    const tcp::endpoint endpoint(asio::ip::make_address(options.host, ec), 0);
    if (!ec) replica->acceptor.open(endpoint.protocol(), ec);
    if (!ec) replica->acceptor.bind(endpoint, ec);
    if (!ec) replica->acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return Unavailable(fmt::format("cannot open a port for {}: {}", id, ec.message()));
    replica->port = replica->acceptor.local_endpoint().port();
    {
      MutexLock replica_lock(replica->mu);
      replica->metrics = RenderLoad(0, 0, options.model_name);
    }
    replicas.emplace(id, replica);
    asio::co_spawn(http->NextContext(), AcceptLoop(replica, accept_failures), asio::detached);
    return replica->port;
  }

  bool Remove(const std::string& id) {
    std::shared_ptr<Replica> replica;
    {
      MutexLock lock(mu);
      auto it = replicas.find(id);
      if (it == replicas.end()) return false;
      replica = std::move(it->second);
      replicas.erase(it);
    }
    {
      MutexLock lock(replica->mu);
      replica->removed = true;
    }
    asio::post(http->NextContext(), [replica] {
      boost::system::error_code ignored;
      replica->acceptor.close(ignored);
    });
    return true;
  }

  Status SetLoad(const std::string& id, int running, int waiting) {
    if (running < 0 || waiting < 0) {
      return InvalidArgument("expected counts >= 0", running < 0 ? "running" : "waiting");
    }
    std::shared_ptr<Replica> replica;
    {
      MutexLock lock(mu);
      auto it = replicas.find(id);
      if (it == replicas.end()) return NotFound(fmt::format("no replica '{}'", id), "id");
      replica = it->second;
    }
    std::string body = RenderLoad(running, waiting, options.model_name);
    MutexLock lock(replica->mu);
    replica->running = running;
    replica->waiting = waiting;
    replica->metrics = std::move(body);
    return OkStatus();
  }

  Status SetMetricsDelay(const std::string& id, Seconds delay) {
    if (!(delay >= Seconds{0})) return InvalidArgument("expected a delay >= 0", "metrics_delay_ms");
    std::shared_ptr<Replica> replica = Find(id);
    if (!replica) return NotFound(fmt::format("no replica '{}'", id), "id");
    MutexLock lock(replica->mu);
    replica->metrics_delay = delay;
    return OkStatus();
  }

  std::shared_ptr<Replica> Find(const std::string& id) {
    MutexLock lock(mu);
    auto it = replicas.find(id);
    return it == replicas.end() ? nullptr : it->second;
  }

  json List() {
    MutexLock lock(mu);
    json list = json::array();
    for (const auto& [id, replica] : replicas) {
      MutexLock replica_lock(replica->mu);
      list.push_back({{"id", id},
                      {"port", replica->port},
                      {"running", replica->running},
                      {"waiting", replica->waiting}});
    }
    return json{{"replicas", std::move(list)}};
  }

  StringResponse Control(const Request& req);

  const FleetOptions options;
  const std::shared_ptr<AcceptFailures> accept_failures;  // every replica's accept loop's
  std::unique_ptr<net::HttpServer> http;
  Mutex mu;
  std::map<std::string, std::shared_ptr<Replica>> replicas GS_GUARDED_BY(mu);
};

namespace {

// A non-negative integer field of `body`; nullopt with `error` set when it is not one.
std::optional<int> ReadCount(const json& body, const char* key, StringResponse& error) {
  auto it = body.find(key);
  if (it == body.end()) return 0;
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 1000000) {
    error = JsonError(http::status::bad_request, "expected an integer in [0, 1000000]", key);
    return std::nullopt;
  }
  return it->get<int>();
}

}  // namespace

StringResponse FleetServer::Impl::Control(const Request& req) {
  const std::string target(req.target());
  constexpr std::string_view kPrefix = "/replicas/";
  const json body = json::parse(req.body(), nullptr, /*allow_exceptions=*/false);
  if (req.method() == http::verb::get && target == "/health") {
    return Reply(http::status::ok, "", "text/plain");
  }
  if (req.method() == http::verb::get && target == "/replicas") {
    return Reply(http::status::ok, List().dump(), "application/json");
  }
  if (req.method() == http::verb::post && target == "/replicas") {
    if (!body.is_object() || !body.contains("id") || !body["id"].is_string()) {
      return JsonError(http::status::bad_request, "expected {\"id\": \"<replica id>\"}", "id");
    }
    const std::string id = body["id"].get<std::string>();
    Result<int> port = Add(id);
    if (!port) {
      return JsonError(port.error().code == ErrorCode::kInvalidArgument
                           ? http::status::bad_request
                           : http::status::service_unavailable,
                       port.error().message, port.error().field);
    }
    return Reply(http::status::ok, json{{"id", id}, {"port", *port}}.dump(), "application/json");
  }
  if (target.starts_with(kPrefix)) {
    std::string id = target.substr(kPrefix.size());
    const bool load = id.ends_with("/load");
    if (load) id.resize(id.size() - 5);
    if (req.method() == http::verb::delete_ && !load) {
      return Remove(id) ? Reply(http::status::no_content, "", "text/plain")
                        : JsonError(http::status::not_found, "no such replica", "id");
    }
    if (req.method() == http::verb::put && load) {
      StringResponse error;
      if (!body.is_object()) {
        return JsonError(http::status::bad_request, "expected a JSON object", "body");
      }
      std::optional<int> running = ReadCount(body, "running", error);
      if (!running) return error;
      std::optional<int> waiting = ReadCount(body, "waiting", error);
      if (!waiting) return error;
      std::optional<int> delay_ms = ReadCount(body, "metrics_delay_ms", error);
      if (!delay_ms) return error;
      Status set = SetLoad(id, *running, *waiting);
      if (set) set = SetMetricsDelay(id, Seconds{*delay_ms / 1000.0});
      if (!set) return JsonError(http::status::not_found, set.error().message, "id");
      return Reply(http::status::no_content, "", "text/plain");
    }
  }
  return JsonError(http::status::not_found, "no such route", "path");
}

Result<std::unique_ptr<FleetServer>> FleetServer::Start(const FleetOptions& options) {
  if (options.threads < 1 || options.threads > 64) {
    return InvalidArgument(fmt::format("expected 1..64, got {}", options.threads), "--threads");
  }
  if (options.model_name.empty()) return InvalidArgument("expected a name", "--model");
  auto impl = std::make_unique<Impl>(options);
  net::HttpServerOptions http_options;
  http_options.host = options.host;
  http_options.port = options.port;
  http_options.threads = options.threads;
  http_options.max_body_bytes = 64 * 1024;
  Impl* raw = impl.get();
  auto handler = [raw](beast::tcp_stream& stream, Request& req) -> awaitable<bool> {
    StringResponse res = raw->Control(req);
    const bool sent = co_await net::WriteResponse(stream, req, res);
    co_return sent;
  };
  auto reject = [](const Request&, http::status status, const std::string& message) {
    return JsonError(status, message, "request");
  };
  GS_ASSIGN_OR_RETURN(impl->http, net::HttpServer::Start(std::move(http_options), handler, reject));
  return std::unique_ptr<FleetServer>(new FleetServer(std::move(impl)));
}

FleetServer::FleetServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FleetServer::~FleetServer() { Stop(); }

int FleetServer::port() const { return impl_->http->port(); }
Result<int> FleetServer::AddReplica(const std::string& id) { return impl_->Add(id); }
bool FleetServer::RemoveReplica(const std::string& id) { return impl_->Remove(id); }
Status FleetServer::SetLoad(const std::string& id, int running, int waiting) {
  return impl_->SetLoad(id, running, waiting);
}

Status FleetServer::SetMetricsDelay(const std::string& id, Seconds delay) {
  return impl_->SetMetricsDelay(id, delay);
}

int64_t FleetServer::accept_failures() const { return impl_->accept_failures->total(); }

size_t FleetServer::replica_count() const {
  MutexLock lock(impl_->mu);
  return impl_->replicas.size();
}

void FleetServer::Stop() {
  if (!impl_->http) return;
  impl_->http->Stop();  // destroys every coroutine, closing listeners and connections
  MutexLock lock(impl_->mu);
  impl_->replicas.clear();
}

}  // namespace gpuscale::emulator
