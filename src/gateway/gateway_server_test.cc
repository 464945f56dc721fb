#include "gateway/gateway_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "testing/raw_socket.h"
#include "testing/wait_until.h"

namespace gpuscale::gateway {
namespace {

using namespace std::chrono_literals;
using gpuscale::testing::WaitUntil;

// An upstream replica on loopback: answers completions with its name and streams SSE when
// asked, one event per `gap`.
class FakeReplica {
 public:
  explicit FakeReplica(std::string name, int events = 3, std::chrono::milliseconds gap = 20ms)
      : name_(std::move(name)) {
    server_.Post("/v1/chat/completions", [this, events, gap](const httplib::Request& req,
                                                             httplib::Response& res) {
      ++requests;
      last_body = req.body;
      // A slow replica in real time: the gateway's timeouts under test run on the real clock.
      std::this_thread::sleep_for(std::chrono::milliseconds(answer_delay_ms.load()));
      if (req.body.find("\"stream\": true") == std::string::npos) {
        res.set_content("{\"served_by\": \"" + name_ + "\"}", "application/json");
        return;
      }
      res.set_chunked_content_provider(
          "text/event-stream", [this, events, gap](size_t, httplib::DataSink& sink) {
            for (int i = 0; i < events || events < 0; ++i) {
              const std::string event = "data: {\"i\": " + std::to_string(i) + "}\n\n";
              if (!sink.write(event.data(), event.size())) {
                client_went_away = true;
                return false;
              }
              if (i == 0) first_event_sent = true;
              // Holds the stream until the client saw the first event (or 5 s pass).
              if (i == 0 && hold_after_first &&
                  !WaitUntil([&] { return release.load(); }, 5000ms, 10ms)) {
                hold_timed_out = true;
              }
              // The gap between events is real time: the gateway relays a live stream.
              std::this_thread::sleep_for(gap);
            }
            const std::string done = "data: [DONE]\n\n";
            sink.write(done.data(), done.size());
            sink.done();
            return true;
          });
    });
    // As vLLM's server: no Nagle delay, and idle keep-alive connections (the gateway pools
    // them) closed after a second, which also bounds how long stop() waits for them.
    server_.set_tcp_nodelay(true);
    server_.set_keep_alive_timeout(1);
    port = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    WaitUntil([this] { return server_.is_running(); }, 10000ms, 1ms);
  }
  ~FakeReplica() {
    release = true;
    server_.stop();
    thread_.join();
  }
  ReplicaRoute Route() const { return {name_, "127.0.0.1", port}; }

  int port = 0;
  std::atomic<int> requests{0};
  std::atomic<int> answer_delay_ms{0};  // before the response's first byte
  std::atomic<bool> first_event_sent{false}, hold_after_first{false}, release{false};
  std::atomic<bool> client_went_away{false}, hold_timed_out{false};
  std::string last_body;

 private:
  std::string name_;
  httplib::Server server_;
  std::thread thread_;
};

// POST `body` to `path`, handing the response body to `receiver` as it arrives (cpp-httplib
// 0.11 has no Post overload with a content receiver).
httplib::Result PostStreaming(httplib::Client& c, const std::string& path,
                              const std::string& body,
                              std::function<bool(const char*, size_t)> receiver) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [receiver](const char* data, size_t n, uint64_t, uint64_t) {
    return receiver(data, n);
  };
  return c.send(req);
}

class GatewayServerTest : public ::testing::Test {
 protected:
  void Start(GatewayConfig config = {}) {
    config.port = 0;
    config.picker.slow_start_seconds = 0;
    state_ = std::make_shared<GatewayState>(config);
    auto server = GatewayServer::Start(state_);
    ASSERT_TRUE(server.has_value()) << server.error().ToString();
    server_ = std::move(*server);
  }
  httplib::Client Client() {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(10, 0);
    return c;
  }
  httplib::Result Chat(const std::string& model, bool stream = false) {
    return Client().Post("/v1/chat/completions",
                         "{\"model\": \"" + model + "\", \"stream\": " +
                             (stream ? "true" : "false") +
                             ", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}",
                         "application/json");
  }

  // A streaming chat request for model llama; its body goes to `received` and `took` is how
  // long it lasted.
  httplib::Result StreamChat(std::string& received, std::chrono::steady_clock::duration& took) {
    httplib::Client c = Client();
    const auto started = std::chrono::steady_clock::now();
    auto res = PostStreaming(c, "/v1/chat/completions", "{\"model\": \"llama\", \"stream\": true}",
                             [&received](const char* data, size_t n) {
                               received.append(data, n);
                               return true;
                             });
    took = std::chrono::steady_clock::now() - started;
    return res;
  }

  std::shared_ptr<GatewayState> state_;
  std::unique_ptr<GatewayServer> server_;
};

TEST_F(GatewayServerTest, RoutesByModelAndListsModels) {
  Start();
  FakeReplica a("a"), b("b");
  state_->Publish({{"chat", {"llama"}, {a.Route()}}, {"code", {"coder"}, {b.Route()}}});
  auto res = Chat("coder");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "{\"served_by\": \"b\"}");
  // The body reaches the replica byte for byte.
  EXPECT_NE(b.last_body.find("\"stream\": false, \"messages\""), std::string::npos);
  auto models = Client().Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_NE(models->body.find("\"id\":\"coder\""), std::string::npos) << models->body;
  EXPECT_NE(models->body.find("\"id\":\"llama\""), std::string::npos);
  // OpenAI's retrieve-model route; names may hold a '/'.
  state_->Publish({{"chat", {"meta/llama"}, {a.Route()}}});
  auto one = Client().Get("/v1/models/meta/llama");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200);
  EXPECT_EQ(one->body, R"({"created":0,"id":"meta/llama","object":"model","owned_by":"chat"})");
  auto none = Client().Get("/v1/models/coder");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 404);
  EXPECT_NE(none->body.find("\"code\":\"model_not_found\""), std::string::npos);
}

// Connections to replicas are kept alive and reused; one the replica closed (cpp-httplib
// closes after 5 requests) is replaced without failing a request.
TEST_F(GatewayServerTest, ReusesReplicaConnectionsAndReplacesClosedOnes) {
  Start();
  FakeReplica a("a");
  state_->Publish({{"chat", {"llama"}, {a.Route()}}});
  for (int i = 0; i < 12; ++i) {
    auto res = Chat("llama");
    ASSERT_TRUE(res) << "request " << i;
    EXPECT_EQ(res->status, 200) << "request " << i;
  }
  EXPECT_EQ(a.requests, 12);
  const std::string text = state_->MetricsText();
  const std::string family = "\ngpuscale_gateway_upstream_connections_opened_total ";
  const size_t at = text.find(family);
  ASSERT_NE(at, std::string::npos) << text;
  const double opened = std::atof(text.c_str() + at + family.size());
  EXPECT_GE(opened, 1);
  EXPECT_LE(opened, 4) << "a connection per request: nothing was reused";
}

TEST_F(GatewayServerTest, UnknownModelAndBadBodiesGetOpenAiErrors) {
  Start();
  FakeReplica a("a");
  state_->Publish({{"chat", {"llama"}, {a.Route()}}});
  auto unknown = Chat("gpt-4");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_NE(unknown->body.find("\"code\":\"model_not_found\""), std::string::npos);
  auto bad = Client().Post("/v1/completions", "{\"prompt\": \"x\"}", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("\"param\":\"model\""), std::string::npos);
  auto route = Client().Get("/v2/nothing");
  ASSERT_TRUE(route);
  EXPECT_EQ(route->status, 404);
  EXPECT_EQ(a.requests, 0);
}

TEST_F(GatewayServerTest, ATokenIsRequiredWhenSetAndNotPassedOn) {
  GatewayConfig config;
  config.token = "s3cret";
  Start(config);
  FakeReplica a("a");
  state_->Publish({{"chat", {"llama"}, {a.Route()}}});
  auto denied = Chat("llama");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(denied->get_header_value("WWW-Authenticate"), "Bearer");
  auto metrics = Client().Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 401) << "the gateway's /metrics is behind its token too";
  httplib::Client c = Client();
  c.set_bearer_token_auth("s3cret");
  auto ok = c.Post("/v1/chat/completions", "{\"model\": \"llama\"}", "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(a.requests, 1);
}

TEST_F(GatewayServerTest, StreamsEachEventAsItArrives) {
  Start();
  FakeReplica a("a", 3);
  a.hold_after_first = true;  // the replica sends nothing more until we saw event 1
  state_->Publish({{"chat", {"llama"}, {a.Route()}}});
  std::string received;
  bool saw_first_while_held = false;
  httplib::Client c = Client();
  auto res = PostStreaming(
      c, "/v1/chat/completions", "{\"model\": \"llama\", \"stream\": true}",
      [&](const char* data, size_t n) {
        received.append(data, n);
        if (!a.release && received.find("\"i\": 0") != std::string::npos) {
          saw_first_while_held = true;
          a.release = true;
        }
        return true;
      });
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_TRUE(saw_first_while_held) << "the gateway buffered the stream";
  EXPECT_FALSE(a.hold_timed_out) << "the first event reached the client only after the rest";
  EXPECT_NE(received.find("data: [DONE]"), std::string::npos);
  // The gateway records the request after its last byte went out: the client may be first.
  std::optional<ServiceStatsView> stats;
  WaitUntil([&] {
    stats = state_->StatsOf("chat");
    return !stats || stats->requests != 0;
  });
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->requests, 1);
  EXPECT_EQ(state_->InFlight("a"), 0);
}

// The value after `prefix` (a whole exposition line's start) in `text`, or -1.
double ExpositionValue(const std::string& text, const std::string& prefix) {
  const size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + 1 + prefix.size()));
}

TEST_F(GatewayServerTest, AddedLatencyLeavesOutTheReplicasTimeAndIsScrapedAtTheGateway) {
  Start();
  FakeReplica a("a");
  a.answer_delay_ms = 300;
  state_->Publish({{"chat", {"llama"}, {a.Route()}}});
  auto res = Chat("llama");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  std::optional<ServiceStatsView> stats;
  WaitUntil([&] {
    stats = state_->StatsOf("chat");
    return !stats || stats->requests != 0;
  });
  auto metrics = Client().Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = metrics->body;
  EXPECT_EQ(
      ExpositionValue(text, "gpuscale_gateway_added_latency_seconds_count{service=\"chat\"} "), 1)
      << text;
  // The replica took 300 ms before its first byte; what the gateway adds is far less (a
  // bound loose enough for sanitizer builds on a busy machine).
  const double added =
      ExpositionValue(text, "gpuscale_gateway_added_latency_seconds_sum{service=\"chat\"} ");
  EXPECT_GE(added, 0) << text;
  EXPECT_LT(added, 0.25) << text;
  EXPECT_GE(
      ExpositionValue(text, "gpuscale_gateway_time_to_first_token_seconds_sum{service=\"chat\"} "),
      0.3)
      << text;
  auto post = Client().Post("/metrics", "", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
}

TEST_F(GatewayServerTest, ARefusedReplicaIsRetriedOnAnother) {
  Start();
  FakeReplica a("a");
  const int dead = gpuscale::testing::ClosedLoopbackPort();
  state_->Publish({{"chat", {"llama"}, {{"dead", "127.0.0.1", dead}, a.Route()}}});
  for (int i = 0; i < 6; ++i) {
    auto res = Chat("llama");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << "request " << i;
  }
  EXPECT_EQ(a.requests, 6);
  EXPECT_EQ(state_->InFlight("dead"), 0);
}

TEST_F(GatewayServerTest, TheActivatorHoldsARequestUntilAReplicaIsReady) {
  Start();
  std::atomic<int> demand{0};
  state_->SetDemandListener([&](const std::string&) { ++demand; });
  state_->Publish({{"chat", {"llama"}, {}}});
  auto pending = std::async(std::launch::async, [&] { return Chat("llama"); });
  // The listener runs after the request is queued, outside the state's lock: wait for both.
  WaitUntil([&] { return state_->Queued("chat") != 0 && demand != 0; }, 2000ms);
  ASSERT_EQ(state_->Queued("chat"), 1);
  EXPECT_EQ(demand, 1);
  FakeReplica a("a");
  state_->Publish({{"chat", {"llama"}, {a.Route()}}});
  auto res = pending.get();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(state_->Queued("chat"), 0);
}

TEST_F(GatewayServerTest, AQueuedClientThatHangsUpLeavesTheQueueAndIsNeverForwarded) {
  Start();
  state_->Publish({{"chat", {"llama"}, {}}});
  {
    httplib::Client c = Client();
    c.set_read_timeout(0, 300000);  // the client gives up after 0.3 s, while queued
    EXPECT_FALSE(c.Post("/v1/chat/completions", "{\"model\": \"llama\"}", "application/json"));
  }
  // The gateway notices within its one-second re-check (real time: a socket and a timer) and
  // records the request as ended by the client: from then on it can no longer be forwarded,
  // which makes the record, not a pause, the point after which to publish a replica.
  const std::string gone =
      "gpuscale_gateway_errors_total{service=\"chat\",reason=\"client_gone\"} 1";
  WaitUntil([&] { return state_->MetricsText().find(gone) != std::string::npos; });
  ASSERT_NE(state_->MetricsText().find(gone), std::string::npos)
      << "the abandoned request did not end\n"
      << state_->MetricsText();
  EXPECT_EQ(state_->Queued("chat"), 0) << "a request nobody awaits still holds a queue place";
  FakeReplica a("a");
  state_->Publish({{"chat", {"llama"}, {a.Route()}}});
  // A second request reaches the replica, so its count below is not 0 for want of a route;
  // it is the only one the replica ever saw.
  auto second = Client().Post("/v1/chat/completions",
                              "{\"model\": \"llama\", \"user\": \"second\"}", "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200);
  EXPECT_EQ(a.requests.load(), 1) << "the woken replica got the abandoned request";
  EXPECT_NE(a.last_body.find("\"user\": \"second\""), std::string::npos) << a.last_body;
}

TEST_F(GatewayServerTest, AFullQueueAndAnExpiredWaitAnswer503WithRetryAfter) {
  GatewayConfig config;
  config.queue_size = 1;
  config.queue_timeout = Seconds{1};
  Start(config);
  state_->Publish({{"chat", {"llama"}, {}}});
  auto waiting = std::async(std::launch::async, [&] { return Chat("llama"); });
  WaitUntil([&] { return state_->Queued("chat") != 0; }, 2000ms);
  auto full = Chat("llama");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 503);
  EXPECT_TRUE(full->has_header("Retry-After"));
  EXPECT_NE(full->body.find("already wait"), std::string::npos);
  auto expired = waiting.get();
  ASSERT_TRUE(expired);
  EXPECT_EQ(expired->status, 503);
  EXPECT_NE(expired->body.find("within 1 s"), std::string::npos) << expired->body;
}

// A service whose replicas cannot start (the daemon sets unavailable_reason) is answered 503
// naming the cause: its queued requests when it turns so, new ones at once, none after the
// default 300 s queue timeout. A ready replica serves again.
TEST_F(GatewayServerTest, AServiceThatCannotStartIsAnswered503NamingTheCauseAtOnce) {
  Start();
  state_->Publish({{"chat", {"llama"}, {}}});
  auto waiting = std::async(std::launch::async, [&] { return Chat("llama"); });
  WaitUntil([&] { return state_->Queued("chat") != 0; }, 2000ms);
  ASSERT_EQ(state_->Queued("chat"), 1);
  ServiceRoute failing{"chat", {"llama"}, {}};
  failing.unavailable_reason = "cannot start 'vllm': No such file or directory";
  state_->Publish({failing});
  auto woken = waiting.get();  // the client's read timeout is 10 s
  ASSERT_TRUE(woken);
  EXPECT_EQ(woken->status, 503);
  EXPECT_NE(woken->body.find("service 'chat' cannot start replicas: cannot start 'vllm': No "
                             "such file or directory"),
            std::string::npos)
      << woken->body;
  EXPECT_NE(woken->body.find("\"code\":\"service_unavailable\""), std::string::npos) << woken->body;
  EXPECT_TRUE(woken->has_header("Retry-After"));
  const auto asked = std::chrono::steady_clock::now();
  auto refused = Chat("llama");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_NE(refused->body.find("cannot start 'vllm'"), std::string::npos) << refused->body;
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 2s) << "the request waited in the queue";
  EXPECT_EQ(state_->Queued("chat"), 0);
  FakeReplica a("a");
  state_->Publish({{"chat", {"llama"}, {a.Route()}}});
  auto served = Chat("llama");
  ASSERT_TRUE(served);
  EXPECT_EQ(served->status, 200) << served->body;
}

TEST_F(GatewayServerTest, AClientThatLeavesCancelsTheReplicasStream) {
  Start();
  FakeReplica a("a", /*events=*/-1, 10ms);  // streams until the connection breaks
  state_->Publish({{"chat", {"llama"}, {a.Route()}}});
  httplib::Client c = Client();
  auto res = PostStreaming(c, "/v1/chat/completions",
                           "{\"model\": \"llama\", \"stream\": true}",
                           [&](const char*, size_t) { return false; });  // leave at once
  EXPECT_FALSE(res);
  WaitUntil([&] { return a.client_went_away.load(); }, 5000ms);
  EXPECT_TRUE(a.client_went_away) << "the replica kept streaming to nobody";
  WaitUntil([&] { return state_->InFlight("a") == 0; }, 2000ms);
  EXPECT_EQ(state_->InFlight("a"), 0);
}

// A replica that reads one request, never answers, and reports whether its connection was
// closed by the other side (the gateway giving up on it) within 5 s.
class SilentReplica {
 public:
  SilentReplica() {
    port = listener_.port();
    thread_ = std::thread([this] {
      const int conn = listener_.Accept();
      if (conn < 0) return;
      got_request = true;
      char buf[4096];
      // Reads the request, then waits for EOF: recv() returns 0 once the gateway closes.
      for (int i = 0; i < 500; ++i) {
        pollfd p{conn, POLLIN, 0};
        if (poll(&p, 1, 10) > 0 && recv(conn, buf, sizeof buf, 0) == 0) {
          closed_by_gateway = true;
          break;
        }
      }
      close(conn);
    });
  }
  ~SilentReplica() {
    listener_.Close();
    thread_.join();
  }
  ReplicaRoute Route() const { return {"silent", "127.0.0.1", port}; }

  int port = 0;
  std::atomic<bool> got_request{false}, closed_by_gateway{false};

 private:
  gpuscale::testing::RawListener listener_;
  std::thread thread_;
};

// Before any response byte (a non-streaming request waits for the whole generation), a
// client that hangs up must still cancel the work at the replica.
TEST_F(GatewayServerTest, AClientThatLeavesBeforeTheFirstByteCancelsTheReplicasRequest) {
  Start();
  SilentReplica replica;
  state_->Publish({{"chat", {"llama"}, {replica.Route()}}});
  httplib::Client c = Client();
  c.set_read_timeout(0, 300000);  // the client gives up after 0.3 s
  auto gave_up = c.Post("/v1/chat/completions", "{\"model\": \"llama\"}", "application/json");
  EXPECT_FALSE(gave_up);
  WaitUntil([&] { return replica.closed_by_gateway.load(); }, 5000ms);
  EXPECT_TRUE(replica.got_request);
  EXPECT_TRUE(replica.closed_by_gateway) << "the replica kept working for a client that left";
  WaitUntil([&] { return state_->InFlight("silent") == 0; });
  EXPECT_EQ(state_->InFlight("silent"), 0);
}

// The relay's own timeout (relay_threads.h's watch): a replica that never sends a byte is
// given up (its connection closed) and, with no other replica, the client gets a 502.
TEST_F(GatewayServerTest, AReplicaSilentPastTheUpstreamTimeoutIsGivenUp) {
  GatewayConfig config;
  config.upstream_timeout = Seconds(0.3);
  Start(config);
  SilentReplica replica;
  state_->Publish({{"chat", {"llama"}, {replica.Route()}}});
  auto res = Chat("llama");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 502) << res->body;
  EXPECT_TRUE(replica.got_request);
  WaitUntil([&] { return replica.closed_by_gateway.load(); }, 3000ms);
  EXPECT_TRUE(replica.closed_by_gateway) << "the gateway waited for the replica to give up";
}

// After the first event the same timeout holds between chunks: the client's response ends
// with an error event while the replica still holds its stream.
TEST_F(GatewayServerTest, AStreamSilentPastTheUpstreamTimeoutIsCutOff) {
  GatewayConfig config;
  config.upstream_timeout = Seconds(0.3);
  Start(config);
  FakeReplica a("a", /*events=*/3, 10ms);
  a.hold_after_first = true;  // silent after the first event for up to 5 s
  state_->Publish({{"chat", {"llama"}, {a.Route()}}});
  httplib::Client c = Client();
  std::string received;
  auto res = PostStreaming(c, "/v1/chat/completions", "{\"model\": \"llama\", \"stream\": true}",
                           [&](const char* data, size_t n) {
                             received.append(data, n);
                             return true;
                           });
  const bool replica_still_holding = !a.hold_timed_out;
  a.release = true;
  EXPECT_TRUE(replica_still_holding) << "the stream ended only when the replica went on";
  EXPECT_NE(received.find("data: {\"i\": 0}"), std::string::npos) << received;
  EXPECT_EQ(received.find("data: {\"i\": 1}"), std::string::npos) << received;
  EXPECT_NE(received.find("\"code\":\"upstream_timeout\""), std::string::npos) << received;
}

// A replica written with raw sockets: for each connection it reads one request (head and
// Content-Length body) and sends what `answer` makes of the head; `answer` returning empty
// means never answer (a hung process: the connection stays open, unanswered). Every
// connection gets a thread of its own, so a hung one does not hold the next.
class RawReplica {
 public:
  explicit RawReplica(std::function<std::string(const std::string& head)> answer)
      : answer_(std::move(answer)) {
    port = listener_.port();
    acceptor_ = std::thread([this] {
      for (;;) {
        const int conn = listener_.Accept();
        if (conn < 0) return;
        if (stop_) {  // the destructor's wake-up connection
          close(conn);
          return;
        }
        std::lock_guard lock(mu_);
        connections_.emplace_back([this, conn] { Serve(conn); });
      }
    });
  }
  ~RawReplica() {
    stop_ = true;
    // A connection wakes the blocked Accept (closing the listener under it would race on
    // its descriptor); the acceptor then sees stop_ and ends.
    { gpuscale::testing::RawClient wake(port); }
    acceptor_.join();
    listener_.Close();
    std::lock_guard lock(mu_);
    for (std::thread& t : connections_) t.join();
  }
  ReplicaRoute Route(const std::string& id) const { return {id, "127.0.0.1", port}; }

  int port = 0;
  std::atomic<int> requests{0};
  std::atomic<bool> saw_expect{false};
  // After the next answer is sent, the connection stays open and silent (a process that
  // stopped mid-response).
  std::atomic<bool> hang_after_answer{false};

 private:
  void Serve(int conn) {
    std::string got;
    char buf[4096];
    // Polls in 10 ms steps so that the destructor's stop_ ends a hung connection.
    auto read_more = [&] {
      while (!stop_) {
        pollfd p{conn, POLLIN, 0};
        if (poll(&p, 1, 10) <= 0) continue;
        const ssize_t n = recv(conn, buf, sizeof buf, 0);
        if (n <= 0) return false;
        got.append(buf, static_cast<size_t>(n));
        return true;
      }
      return false;
    };
    while (got.find("\r\n\r\n") == std::string::npos) {
      if (!read_more()) return (void)close(conn);
    }
    const std::string head = got.substr(0, got.find("\r\n\r\n") + 4);
    std::string lower = head;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.find("\r\nexpect:") != std::string::npos) saw_expect = true;
    ++requests;
    const std::string answer = answer_(head);
    if (!answer.empty() && hang_after_answer.exchange(false)) {
      send(conn, answer.data(), answer.size(), MSG_NOSIGNAL);
      while (read_more()) {
      }
    } else if (answer.empty()) {
      while (read_more()) {
      }
    } else {
      send(conn, answer.data(), answer.size(), MSG_NOSIGNAL);
      shutdown(conn, SHUT_WR);
      while (read_more()) {  // until the gateway closes: no reset under its reads
      }
    }
    close(conn);
  }

  std::function<std::string(const std::string&)> answer_;
  gpuscale::testing::RawListener listener_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::thread> connections_;
  std::thread acceptor_;
};

std::string JsonAnswer(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

std::string ChatRequestHead(size_t body_size, const std::string& extra = "") {
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(body_size) + "\r\n" + extra + "\r\n";
}

// curl sends `Expect: 100-continue` with any body over 1 MB. The gateway answers the 100
// itself; forwarded, the header made the replica send its own 100 (uvicorn does), which was
// relayed as the final response: the client never got the 200.
TEST_F(GatewayServerTest, AnExpect100ContinueRequestGetsTheReplicasFinalAnswer) {
  Start();
  RawReplica replica([](const std::string& head) {
    std::string lower = head;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool expects = lower.find("expect: 100-continue") != std::string::npos;
    return (expects ? std::string("HTTP/1.1 100 Continue\r\n\r\n") : std::string()) +
           JsonAnswer("{\"served_by\": \"r\"}");
  });
  state_->Publish({{"chat", {"llama"}, {replica.Route("r")}}});
  const std::string body = "{\"model\": \"llama\", \"messages\": []}";
  gpuscale::testing::RawClient client(server_->port());
  ASSERT_TRUE(client.Send(ChatRequestHead(body.size(), "Expect: 100-continue\r\n")));
  const std::string interim = client.ReadUntil("\r\n\r\n", 5000ms);
  EXPECT_TRUE(interim.starts_with("HTTP/1.1 100 Continue")) << interim;
  client.Clear();
  ASSERT_TRUE(client.Send(body));
  const std::string answer = client.ReadUntil("served_by", 5000ms);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;
  EXPECT_NE(answer.find("served_by"), std::string::npos) << answer;
  EXPECT_FALSE(replica.saw_expect) << "the gateway forwarded Expect after answering it";
}

// An interim response (RFC 9110 15.2: 1xx other than 101) is followed by the final one,
// which is what the client must get.
TEST_F(GatewayServerTest, AnInterimResponseFromAReplicaIsNotRelayedAsTheAnswer) {
  Start();
  RawReplica replica([](const std::string&) {
    return "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" +
           JsonAnswer("{\"served_by\": \"r\"}");
  });
  state_->Publish({{"chat", {"llama"}, {replica.Route("r")}}});
  auto res = Chat("llama");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "{\"served_by\": \"r\"}");
}

// RFC 9112 6.3: a Transfer-Encoding whose final coding is not chunked leaves the body's
// length unknown: 400 and close. Beast read such a body as empty and ran its bytes as the
// next request (here a smuggled GET /metrics).
TEST_F(GatewayServerTest, ATransferEncodingThatIsNotChunkedAloneIsRefusedAndNotRunAsARequest) {
  Start();
  FakeReplica a("a");
  state_->Publish({{"chat", {"llama"}, {a.Route()}}});
  const std::string smuggled = "GET /metrics HTTP/1.1\r\nHost: gw\r\n\r\n";
  for (const std::string coding : {"xchunked", "chunked, identity", "identity"}) {
    gpuscale::testing::RawClient client(server_->port());
    ASSERT_TRUE(client.Send(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: " + coding +
        "\r\n\r\n" + smuggled));
    const std::string answer = client.ReadAll(5000ms);
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 400")) << coding << ": " << answer;
    EXPECT_NE(answer.find("Transfer-Encoding"), std::string::npos) << answer;
    EXPECT_EQ(answer.find("gpuscale_gateway"), std::string::npos)
        << coding << ": the body ran as a request: " << answer;
    EXPECT_TRUE(client.closed()) << coding;
  }
  gpuscale::testing::RawClient gzip(server_->port());
  ASSERT_TRUE(
      gzip.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: gzip, "
                "chunked\r\n\r\n"));
  EXPECT_TRUE(gzip.ReadAll(5000ms).starts_with("HTTP/1.1 501")) << "an unsupported coding";
  EXPECT_EQ(a.requests, 0);
}

// A stream whose replica goes silent after its first event ends, within the stream idle
// timeout, with an error event in OpenAI's shape and [DONE], the chunked body terminated:
// the client sees why instead of a hang or a bare truncation.
TEST_F(GatewayServerTest, AStreamSilentPastTheIdleTimeoutEndsWithAnErrorEvent) {
  GatewayConfig config;
  config.stream_idle_timeout = Seconds(0.3);  // upstream_timeout stays 600 s
  Start(config);
  FakeReplica a("a", /*events=*/3, 10ms);
  a.hold_after_first = true;  // silent after the first event for up to 5 s
  state_->Publish({{"chat", {"llama"}, {a.Route()}}});
  std::string received;
  std::chrono::steady_clock::duration took{};
  auto res = StreamChat(received, took);
  a.release = true;
  ASSERT_TRUE(res) << "the chunked body must end well-formed";
  EXPECT_LT(took, 4s);
  EXPECT_NE(received.find("data: {\"i\": 0}"), std::string::npos) << received;
  EXPECT_NE(received.find("data: {\"error\":{"), std::string::npos) << received;
  EXPECT_NE(received.find("\"code\":\"upstream_timeout\""), std::string::npos) << received;
  EXPECT_NE(received.find("data: [DONE]"), std::string::npos) << received;
  // Recorded once the relay returns, which may be just after the client read the end.
  WaitUntil([&] {
    return state_->MetricsText().find("reason=\"upstream_timeout\"} 1") != std::string::npos;
  });
  EXPECT_NE(state_->MetricsText().find("reason=\"upstream_timeout\"} 1"), std::string::npos)
      << state_->MetricsText();
}

// A replica that stopped (SIGSTOP: connections complete in the kernel's backlog and nothing
// answers) fails no request by itself; the gateway's health checks take it out of rotation
// within interval x failures + timeout. Real time: the checks are sockets and timers.
TEST_F(GatewayServerTest, HealthChecksTakeAHungReplicaOutOfRotation) {
  GatewayConfig config;
  config.health_check_interval = Seconds(0.1);
  config.health_check_timeout = Seconds(0.2);
  config.health_check_failures = 2;
  Start(config);
  FakeReplica good("good");
  gpuscale::testing::RawListener hung;  // never accepts: a stopped process
  state_->Publish({{"chat", {"llama"}, {good.Route(), {"hung", "127.0.0.1", hung.port()}}}});
  WaitUntil([&] { return state_->Down("hung"); }, 3000ms);
  ASSERT_TRUE(state_->Down("hung")) << "the health checks never gave the hung replica up";
  EXPECT_FALSE(state_->Down("good")) << "a replica without /health answers 404: alive";
  for (int i = 0; i < 10; ++i) {
    auto res = Chat("llama");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->body, "{\"served_by\": \"good\"}");
  }
  EXPECT_EQ(good.requests, 10);
}

// A stream in flight on a replica that then hangs ends with an error event as soon as the
// health checks give the replica up, long before any timeout (both are 600 s here).
TEST_F(GatewayServerTest, AStreamOnAReplicaTheHealthChecksGiveUpEndsWithAnErrorEvent) {
  GatewayConfig config;
  config.stream_idle_timeout = Seconds(600);
  config.health_check_interval = Seconds(0.1);
  config.health_check_timeout = Seconds(0.2);
  Start(config);
  std::atomic<bool> hung{false};
  RawReplica* self = nullptr;
  // Streams one event, then hangs: from then on nothing it accepts is answered.
  RawReplica replica([&hung, &self](const std::string& head) -> std::string {
    if (hung) return std::string();
    if (!head.starts_with("POST")) return "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    hung = true;
    self->hang_after_answer = true;
    return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
           "Transfer-Encoding: chunked\r\n\r\n"
           "10\r\ndata: {\"i\": 0}\n\n\r\n";
  });
  self = &replica;
  state_->Publish({{"chat", {"llama"}, {replica.Route("r")}}});
  WaitUntil([&] { return !state_->Down("r"); }, 1000ms);
  ASSERT_FALSE(state_->Down("r"));
  std::string received;
  std::chrono::steady_clock::duration took{};
  auto res = StreamChat(received, took);
  EXPECT_LT(took, 5s);
  ASSERT_TRUE(res) << received;
  EXPECT_EQ(res->status, 200) << received;
  EXPECT_NE(received.find("data: {\"i\": 0}"), std::string::npos) << received;
  EXPECT_NE(received.find("\"code\":\"replica_down\""), std::string::npos) << received;
  EXPECT_NE(received.find("data: [DONE]"), std::string::npos) << received;
  EXPECT_TRUE(state_->Down("r"));
}

// RFC 9110 15.5.6: a 405 names the methods the route takes in an Allow header.
TEST_F(GatewayServerTest, AWrongMethodIs405WithAllow) {
  Start();
  struct Case {
    const char* method;
    const char* path;
    const char* allow;
  };
  for (const Case& c :
       {Case{"POST", "/metrics", "GET"}, Case{"DELETE", "/v1/models", "GET"},
        Case{"PUT", "/v1/models/llama", "GET"}, Case{"GET", "/v1/chat/completions", "POST"},
        Case{"GET", "/v1/embeddings", "POST"}}) {
    httplib::Request req;
    req.method = c.method;
    req.path = c.path;
    httplib::Client client = Client();
    httplib::Result res = client.send(req);
    ASSERT_TRUE(res) << c.method << " " << c.path;
    EXPECT_EQ(res->status, 405) << c.method << " " << c.path;
    EXPECT_EQ(res->get_header_value("Allow"), c.allow) << c.method << " " << c.path;
  }
}

TEST_F(GatewayServerTest, ABusyPortIsAnErrorNamingTheField) {
  Start();
  GatewayConfig config;
  config.port = server_->port();
  auto second = GatewayServer::Start(std::make_shared<GatewayState>(config));
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().field, "gateway.listen");
}

}  // namespace
}  // namespace gpuscale::gateway

namespace gpuscale::gateway {
namespace {

using namespace std::chrono_literals;

httplib::Result ChatWith(int port, const httplib::Headers& headers) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(10, 0);
  return c.Post("/v1/chat/completions", headers, R"({"model": "llama", "messages": []})",
                "application/json");
}

void ExpectOpenAiError(const httplib::Result& res, int status, std::string_view code) {
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, status);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  for (const char* field : {"\"error\"", "\"message\"", "\"type\"", "\"param\"", "\"code\""}) {
    EXPECT_NE(res->body.find(field), std::string::npos) << field << " in " << res->body;
  }
  EXPECT_NE(res->body.find("\"code\":\"" + std::string(code) + "\""), std::string::npos)
      << res->body;
}

// A saturated service (one replica, one request at a time, busy for a second): a sheddable
// request waits in the queue, shown on /metrics by priority, until its budget (0.3 s) runs out,
// then gets 429 with Retry-After in OpenAI's error shape; the critical one is served.
TEST_F(GatewayServerTest, ASheddableRequestPastItsWaitBudgetIsShedWith429) {
  FakeReplica r1("r1");
  r1.answer_delay_ms = 600;
  GatewayConfig config;
  config.admission.max_in_flight_per_replica = 1;
  config.admission.sheddable_max_wait = Seconds{0.3};
  Start(config);
  state_->Publish({{"chat", {"llama"}, {r1.Route()}}});
  const int port = server_->port();
  auto critical = std::async(std::launch::async, [port] {
    return ChatWith(port, {{"x-gpuscale-priority", "critical"}});
  });
  ASSERT_TRUE(WaitUntil([&] { return state_->InFlight("r1") == 1; }, 2000ms));
  auto sheddable = std::async(std::launch::async, [port] {
    return ChatWith(port, {{"x-gpuscale-priority", "sheddable"}});
  });
  ASSERT_TRUE(WaitUntil([&] { return state_->Queued("chat") == 1; }, 2000ms));
  const std::string metrics = state_->MetricsText();
  EXPECT_NE(
      metrics.find("gpuscale_gateway_queue_requests{service=\"chat\",priority=\"sheddable\"} 1"),
      std::string::npos)
      << metrics;
  const httplib::Result shed = sheddable.get();
  ExpectOpenAiError(shed, 429, "request_shed");
  EXPECT_EQ(shed->get_header_value("Retry-After"), "1");
  const httplib::Result served = critical.get();
  ASSERT_TRUE(served);
  EXPECT_EQ(served->status, 200);
  EXPECT_EQ(r1.requests, 1) << "the shed request never reached the replica";
  EXPECT_EQ(state_->Queued("chat"), 0);
}

TEST_F(GatewayServerTest, ATenantPastItsTokensPerMinuteGets429WithRateLimitHeaders) {
  FakeReplica r1("r1");
  GatewayConfig config;
  config.admission.tenant_tokens_per_minute = 400;  // one request of ~265 expected tokens
  Start(config);
  state_->Publish({{"chat", {"llama"}, {r1.Route()}}});
  const int port = server_->port();
  const httplib::Headers alice = {{"Authorization", "Bearer sk-alice"}};
  const httplib::Result first = ChatWith(port, alice);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  const httplib::Result limited = ChatWith(port, alice);
  ExpectOpenAiError(limited, 429, "rate_limit_exceeded");
  EXPECT_EQ(limited->get_header_value("x-ratelimit-limit-tokens"), "400");
  const int remaining = std::stoi(limited->get_header_value("x-ratelimit-remaining-tokens"));
  EXPECT_GE(remaining, 130);
  EXPECT_LT(remaining, 265);
  EXPECT_TRUE(limited->get_header_value("x-ratelimit-reset-tokens").ends_with("s"));
  EXPECT_TRUE(limited->has_header("Retry-After"));
  // Another API key is another tenant.
  const httplib::Result bob = ChatWith(port, {{"Authorization", "Bearer sk-bob"}});
  ASSERT_TRUE(bob);
  EXPECT_EQ(bob->status, 200);
  EXPECT_EQ(r1.requests, 2);
}

TEST_F(GatewayServerTest, AnUnknownPriorityIs400NamingTheHeader) {
  FakeReplica r1("r1");
  Start();
  state_->Publish({{"chat", {"llama"}, {r1.Route()}}});
  const httplib::Result bad = ChatWith(server_->port(), {{"x-gpuscale-priority", "urgent"}});
  ExpectOpenAiError(bad, 400, "invalid_priority");
  EXPECT_NE(bad->body.find("\"param\":\"x-gpuscale-priority\""), std::string::npos) << bad->body;
  EXPECT_EQ(r1.requests, 0);
}

}  // namespace
}  // namespace gpuscale::gateway
