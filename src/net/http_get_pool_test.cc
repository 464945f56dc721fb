#include "net/http_get_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/http_server.h"

namespace gpuscale::net {
namespace {

// A server that answers "ok <target>" (or `big` bytes on /big, nothing for 10 s on /hang),
// keeping connections alive for `idle`, and counts the connections it accepted.
class CountingServer {
 public:
  explicit CountingServer(Seconds idle = Seconds{30}) {
    HttpServerOptions options;
    options.idle_timeout = idle;
    options.threads = 2;
    options.on_connection = [this](int delta) {
      if (delta > 0) ++accepted;
    };
    auto handler = [](beast::tcp_stream& stream, Request& req) -> asio::awaitable<bool> {
      const std::string target(req.target());
      if (target == "/hang") {
        asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::seconds(10));
        co_await timer.async_wait(kTuple);
      }
      StringResponse res{http::status::ok, 11};
      res.body() = target == "/big" ? std::string(4096, 'x') : "ok " + target;
      const bool sent = co_await WriteResponse(stream, req, res);
      co_return sent;
    };
    auto reject = [](const Request&, http::status status, const std::string& message) {
      StringResponse res{status, 11};
      res.body() = message;
      return res;
    };
    Result<std::unique_ptr<HttpServer>> started = HttpServer::Start(options, handler, reject);
    EXPECT_TRUE(started.has_value()) << started.error().ToString();
    server = std::move(*started);
  }

  HttpGetRequest Get(const std::string& target, Seconds timeout = Seconds{5}) const {
    HttpGetRequest request;
    request.host = "127.0.0.1";
    request.port = server->port();
    request.target = target;
    request.timeout = timeout;
    return request;
  }

  std::atomic<int> accepted{0};
  std::unique_ptr<HttpServer> server;
};

TEST(HttpGetPoolTest, AnswersEveryRequestInOrderOverKeptConnections) {
  CountingServer server;
  HttpGetPoolOptions options;
  options.max_in_flight = 4;
  HttpGetPool pool(options);
  std::vector<HttpGetRequest> requests;
  for (int i = 0; i < 40; ++i) requests.push_back(server.Get("/r" + std::to_string(i)));
  for (int batch = 0; batch < 3; ++batch) {
    std::vector<Result<HttpGetResponse>> results = pool.GetAll(requests);
    ASSERT_EQ(results.size(), requests.size());
    for (size_t i = 0; i < results.size(); ++i) {
      ASSERT_TRUE(results[i].has_value()) << i << ": " << results[i].error().ToString();
      EXPECT_EQ(results[i]->status, 200);
      EXPECT_EQ(results[i]->body, "ok /r" + std::to_string(i));
    }
  }
  // 4 at a time: at most 4 connections for all 120 requests, the rest reused.
  EXPECT_LE(pool.connections_opened(), 4);
  EXPECT_EQ(pool.connections_opened(), server.accepted.load());
  EXPECT_GE(pool.requests_reused(), 120 - 4);
  EXPECT_GE(pool.idle_connections(), 1u);
}

// Address literals connect without a lookup; names are resolved (asynchronously; only
// "localhost", from /etc/hosts: tests send nothing outside 127.0.0.0/8, DNS included).
TEST(HttpGetPoolTest, ResolvesHostNamesAndConnectsToAddressesDirectly) {
  CountingServer server;
  HttpGetPool pool;
  HttpGetRequest by_name = server.Get("/name");
  by_name.host = "localhost";
  std::vector<Result<HttpGetResponse>> results = pool.GetAll({server.Get("/literal"), by_name});
  ASSERT_TRUE(results[0].has_value()) << results[0].error().ToString();
  EXPECT_EQ(results[0]->body, "ok /literal");
  if (results[1].has_value()) {
    EXPECT_EQ(results[1]->body, "ok /name");
  } else {
    // Where "localhost" is ::1 only, a server on 127.0.0.1 is not reached, but the name was.
    EXPECT_THAT(results[1].error().message, ::testing::Not(::testing::HasSubstr("resolve")));
  }
}

// The server closes idle connections sooner than the pool would drop them: the first
// request on each stale connection is retried on a fresh one and nothing fails.
TEST(HttpGetPoolTest, RetriesOnAFreshConnectionWhenTheServerClosedAKeptOne) {
  CountingServer server(Seconds{0.2});
  HttpGetPool pool;
  ASSERT_TRUE(pool.GetAll({server.Get("/a")})[0].has_value());
  // Past the server's 0.2 s keep-alive, which runs on the real clock in its own thread.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  Result<HttpGetResponse> again = std::move(pool.GetAll({server.Get("/b")})[0]);
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_EQ(again->body, "ok /b");
  EXPECT_EQ(pool.connections_opened(), 2);
}

TEST(HttpGetPoolTest, DropsConnectionsIdleLongerThanItsTimeout) {
  CountingServer server;
  HttpGetPoolOptions options;
  options.idle_timeout = Seconds{0.1};
  HttpGetPool pool(options);
  ASSERT_TRUE(pool.GetAll({server.Get("/a")})[0].has_value());
  // Past the pool's idle timeout: the pool times its connections with steady_clock, as the
  // deadlines of the sockets it polls are.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(pool.GetAll({server.Get("/b")})[0].has_value());
  EXPECT_EQ(pool.connections_opened(), 2);
  EXPECT_EQ(pool.requests_reused(), 0);
}

TEST(HttpGetPoolTest, OneRequestsFailureLeavesTheOthersAlone) {
  CountingServer server;
  HttpGetPool pool;
  HttpGetRequest big = server.Get("/big");
  big.max_body_bytes = 100;
  HttpGetRequest refused = server.Get("/x");
  refused.port = 1;  // nothing listens on port 1 on loopback
  std::vector<Result<HttpGetResponse>> results =
      pool.GetAll({server.Get("/hang", Seconds{0.3}), big, refused, server.Get("/fine")});
  ASSERT_FALSE(results[0].has_value());
  EXPECT_NE(results[0].error().message.find("timed out after 0.3 s"), std::string::npos)
      << results[0].error().message;
  ASSERT_FALSE(results[1].has_value());
  EXPECT_EQ(results[1].error().code, ErrorCode::kResourceExhausted);
  ASSERT_FALSE(results[2].has_value());
  EXPECT_EQ(results[2].error().message, "connection refused");
  ASSERT_TRUE(results[3].has_value()) << results[3].error().ToString();
  EXPECT_EQ(results[3]->body, "ok /fine");
}

// Submit and Run: a Run ends when `finished` says so or at its deadline, and leaves the rest
// in flight for a later Run, where each request still ends by its own timeout.
TEST(HttpGetPoolTest, RequestsLeftByARunEndInALaterOne) {
  CountingServer server;
  HttpGetPool pool;
  std::vector<std::string> answered;
  std::optional<Result<HttpGetResponse>> hung, slow;
  pool.Submit(server.Get("/hang", Seconds{30}), [&](Result<HttpGetResponse> r) { hung = r; });
  pool.Submit(server.Get("/hang", Seconds{1}), [&](Result<HttpGetResponse> r) { slow = r; });
  for (int i = 0; i < 3; ++i) {
    pool.Submit(server.Get("/r" + std::to_string(i)), [&](Result<HttpGetResponse> r) {
      answered.push_back(r ? r->body : r.error().ToString());
    });
  }
  EXPECT_EQ(pool.pending(), 5u);
  const auto far = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  pool.Run(far, [&] { return answered.size() == 3; });
  EXPECT_THAT(answered, ::testing::UnorderedElementsAre("ok /r0", "ok /r1", "ok /r2"));
  EXPECT_FALSE(hung.has_value());
  EXPECT_EQ(pool.pending(), 2u);

  // Nothing progresses between runs, but the 1 s deadline was kept: the next Run ends it.
  // (Real time: the request deadlines are steady_clock instants, as the sockets' are.)
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  pool.Run(far, [&] { return slow.has_value(); });
  ASSERT_TRUE(slow.has_value());
  ASSERT_FALSE(slow->has_value());
  EXPECT_THAT(slow->error().message, ::testing::HasSubstr("timed out after 1 s"));
  // A Run that reaches its deadline returns with the other still in flight.
  pool.Run(std::chrono::steady_clock::now() + std::chrono::milliseconds(20), [] { return false; });
  EXPECT_FALSE(hung.has_value());
  EXPECT_EQ(pool.pending(), 1u);
  // The pool goes away with it in flight: `done` is not called (hung stays empty).
}

TEST(HttpGetPoolTest, OneOffGetsKeepNothing) {
  CountingServer server;
  HttpGetPoolOptions options;
  options.keep_alive = false;
  HttpGetPool pool(options);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pool.GetAll({server.Get("/a")})[0].has_value());
  EXPECT_EQ(pool.connections_opened(), 3);
  EXPECT_EQ(pool.idle_connections(), 0u);
  Result<HttpGetResponse> one = HttpGet(server.Get("/one"));
  ASSERT_TRUE(one.has_value()) << one.error().ToString();
  EXPECT_EQ(one->body, "ok /one");
}

}  // namespace
}  // namespace gpuscale::net
