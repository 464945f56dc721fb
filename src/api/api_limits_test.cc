// The API server's limits against hostile and slow clients (issue 27, item 3): each test
// reproduces one way the thread-per-connection server could be locked out or made to buffer
// without bound, and pins the answer the asynchronous server gives instead.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "testing/api_test_util.h"
#include "testing/open_files.h"
#include "testing/raw_socket.h"

namespace gpuscale::api {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using testing::RawClient;

std::string StatusLine(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

std::string BodyOf(const std::string& response) {
  const size_t start = response.find("\r\n\r\n");
  return start == std::string::npos ? "" : response.substr(start + 4);
}

// How many sockets the test may open, up to `wanted`: the soft limit it could raise, less a
// margin for the process's own descriptors.
int SocketsAllowed(int wanted) {
  const rlim_t limit = testing::RaiseOpenFiles(static_cast<rlim_t>(wanted) + 256);
  return static_cast<int>(std::min<rlim_t>(limit - 128, static_cast<rlim_t>(wanted)));
}

TEST_F(ApiServerTest, ChunkedBodyOverTheLimitIs413) {
  RawClient client(port_);
  ASSERT_TRUE(client.connected());
  client.Send("POST /v1/services HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              "Transfer-Encoding: chunked\r\n\r\n");
  // 2 MiB in 64 KiB chunks: a server that checks only Content-Length would read it all.
  const std::string chunk(64 * 1024, 'a');
  for (int i = 0; i < 32 && client.Send("10000\r\n" + chunk + "\r\n"); ++i) {
  }
  const std::string response = client.ReadUntil("}\n", milliseconds(5000));
  EXPECT_EQ(StatusLine(response), "HTTP/1.1 413 Payload Too Large") << response.substr(0, 200);
  EXPECT_EQ(json::parse(BodyOf(response))["error"]["code"], "payload_too_large");
  EXPECT_TRUE(daemon_.ListServices().empty());
}

TEST_F(ApiServerTest, TooManyOrTooLargeHeadersAre431) {
  std::string many = "GET /v1/services HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 5000; ++i) many += "X-Field-" + std::to_string(i) + ": 1\r\n";
  RawClient fields(port_);
  fields.Send(many + "\r\n");
  std::string response = fields.ReadUntil("}\n", milliseconds(5000));
  EXPECT_EQ(StatusLine(response), "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_NE(BodyOf(response).find("header"), std::string::npos) << response;

  RawClient large(port_);
  large.Send("GET /v1/services HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(100 * 1024, 'b') +
             "\r\n\r\n");
  response = large.ReadUntil("}\n", milliseconds(5000));
  EXPECT_EQ(StatusLine(response), "HTTP/1.1 431 Request Header Fields Too Large");
}

TEST_F(ApiServerTest, GarbageAndBadEscapesAre400WithAnErrorBody) {
  RawClient garbage(port_);
  garbage.Send("HELLO THERE\r\n\r\n");
  std::string response = garbage.ReadUntil("}\n", milliseconds(5000));
  EXPECT_EQ(StatusLine(response), "HTTP/1.1 400 Bad Request") << response;
  EXPECT_EQ(json::parse(BodyOf(response))["error"]["code"], "bad_request");

  httplib::Result bad_escape = client_->Get("/v1/events?kind=%zz");
  ASSERT_TRUE(bad_escape);
  EXPECT_EQ(bad_escape->status, 400);
  EXPECT_EQ(ErrorOf(bad_escape)["field"], "target");
}

TEST_F(ApiServerTest, HeadAnswersTheHeadersOfGetWithoutABody) {
  RawClient client(port_);
  client.Send("HEAD /v1/services HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string response = client.ReadAll(milliseconds(5000));
  EXPECT_EQ(StatusLine(response), "HTTP/1.1 200 OK");
  EXPECT_NE(response.find("Content-Length: "), std::string::npos);
  EXPECT_EQ(response.find("Content-Length: 0\r\n"), std::string::npos) << "GET's length";
  EXPECT_EQ(BodyOf(response), "");
}

TEST_F(ApiServerTest, ExpectContinueGetsAnInterimAnswerBeforeTheBody) {
  RawClient client(port_);
  const std::string body = kRulesService;
  client.Send("POST /v1/services HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              "Expect: 100-continue\r\nContent-Length: " +
              std::to_string(body.size()) + "\r\n\r\n");
  std::string response = client.ReadUntil("\r\n\r\n", milliseconds(5000));
  EXPECT_EQ(StatusLine(response), "HTTP/1.1 100 Continue");
  client.Send(body);
  response = client.ReadUntil("201 Created", milliseconds(5000));
  EXPECT_NE(response.find("HTTP/1.1 201 Created"), std::string::npos) << response;
}

TEST_F(ApiServerTest, KeptAliveConnectionServesManyRequests) {
  RawClient client(port_);
  for (int i = 0; i < 20; ++i) {
    client.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(StatusLine(client.ReadUntil("\"ok\"", milliseconds(5000))), "HTTP/1.1 200 OK")
        << "request " << i;
    client.Clear();
  }
  EXPECT_FALSE(client.closed());
}

class ApiServerSlowClientTest : public ApiServerTest {
 protected:
  void SetUp() override { StartServer({.header_timeout = Seconds{1}}); }
};

TEST_F(ApiServerSlowClientTest, SlowHeadersNeitherBlockOthersNorOutliveTheDeadline) {
  // 64 connections that start a request and go quiet (twice the old thread pool).
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 64; ++i) {
    slow.push_back(std::make_unique<RawClient>(port_));
    slow.back()->Send("GET /v1/services HTTP/1.1\r\nHo");
  }
  httplib::Result health = client_->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  ASSERT_TRUE(client_->Get("/v1/services"));
  // Each has one deadline for its whole request: trickling a byte now and then does not
  // extend it, and the server closes them. (Real time: the deadline is the server's
  // steady_clock, and the trickle must outlast it.)
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(milliseconds(400));
    for (auto& c : slow) c->Send("s");
  }
  for (auto& c : slow) c->ReadAll(milliseconds(3000));
  int closed = 0;
  for (auto& c : slow) closed += c->closed() ? 1 : 0;
  EXPECT_EQ(closed, 64);
}

class ApiServerTokenTest : public ApiServerTest {
 protected:
  void SetUp() override { StartServer({.token = "s3cret-token"}); }
};

TEST_F(ApiServerTokenTest, UnauthenticatedBodyIsRefusedBeforeItIsRead) {
  RawClient client(port_);
  // Announces 512 KiB but sends none of it: the 401 must not wait for the body.
  client.Send("POST /v1/services HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              "Content-Length: 524288\r\n\r\n");
  const std::string response = client.ReadUntil("}\n", milliseconds(5000));
  EXPECT_EQ(StatusLine(response), "HTTP/1.1 401 Unauthorized") << response;
}

class ApiServerStreamCapTest : public ApiServerTest {
 protected:
  void SetUp() override { StartServer({.max_event_streams = 2}); }
};

TEST_F(ApiServerStreamCapTest, StreamsPastTheCapAre503AndOthersStillAnswer) {
  RawClient first(port_), second(port_), third(port_);
  const std::string open = "GET /v1/events/stream HTTP/1.1\r\nHost: x\r\n\r\n";
  for (RawClient* c : {&first, &second}) {
    c->Send(open);
    EXPECT_EQ(StatusLine(c->ReadUntil("\r\n\r\n", milliseconds(5000))), "HTTP/1.1 200 OK");
  }
  third.Send(open);
  const std::string refused = third.ReadUntil("}\n", milliseconds(5000));
  EXPECT_EQ(StatusLine(refused), "HTTP/1.1 503 Service Unavailable") << refused;
  EXPECT_NE(refused.find("max_event_streams"), std::string::npos);
  EXPECT_NE(refused.find("Retry-After: 5"), std::string::npos);
  EXPECT_EQ(server_->event_streams(), 2);
  EXPECT_EQ(client_->Get("/v1/services")->status, 200);
  // A stream that ends frees its place.
  daemon_.AddEvent("chat", "decision", "to the open streams");
  first.ReadUntil("id: 1", milliseconds(5000));
}

// RFC 9112 6.3 on the API too: a body of unknown length is refused and never run as the
// next request.
TEST_F(ApiServerTest, ATransferEncodingNotEndingInChunkedIs400AndClosed) {
  RawClient client(port_);
  client.Send(
      "POST /v1/services HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n"
      "\r\nDELETE /v1/services/chat HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string response = client.ReadAll(milliseconds(5000));
  EXPECT_EQ(StatusLine(response), "HTTP/1.1 400 Bad Request") << response;
  EXPECT_EQ(response.find("HTTP/1.1 2"), std::string::npos) << response;
  EXPECT_TRUE(client.closed());
}

class ApiServerFloodTest : public ApiServerTest {
 protected:
  void SetUp() override { StartServer({.max_connections = 64, .max_connections_per_client = 32}); }
};

// Connections that never send a request (half-open, or a pool nobody uses) filled the server
// and locked out /healthz until their header timeout: a newcomer now displaces the one
// waiting longest, one client address holds at most its cap, and a request in progress is
// never displaced.
TEST_F(ApiServerFloodTest, HalfOpenConnectionsFromOneAddressDoNotLockOutHealth) {
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 200; ++i) idle.push_back(std::make_unique<RawClient>(port_));
  RawClient busy(port_);  // a stream in progress, opened after the flood
  busy.Send("GET /v1/events/stream HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(StatusLine(busy.ReadUntil("\r\n\r\n", milliseconds(5000))), "HTTP/1.1 200 OK");
  for (int i = 0; i < 200; ++i) idle.push_back(std::make_unique<RawClient>(port_));
  for (int i = 0; i < 5; ++i) {
    httplib::Client health("127.0.0.1", port_);
    health.set_connection_timeout(2, 0);
    health.set_read_timeout(2, 0);
    httplib::Result res = health.Get("/healthz");
    ASSERT_TRUE(res) << "attempt " << i << ": " << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
  }
  // The stream was busy: still open, and it gets the next event.
  daemon_.AddEvent("chat", "decision", "still here");
  EXPECT_NE(busy.ReadUntil("still here", milliseconds(5000)).find("still here"), std::string::npos);
}

TEST_F(ApiServerTest, HundredsOfStreamsAndSlowHeadersLeaveTheApiAnswering) {
  const int streams = SocketsAllowed(300);
  ASSERT_GE(streams, 100) << "the open-files limit is too low for this test";
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < streams; ++i) {
    clients.push_back(std::make_unique<RawClient>(port_));
    clients.back()->Send(i % 2 == 0 ? "GET /v1/events/stream HTTP/1.1\r\nHost: x\r\n\r\n"
                                    : "GET /v1/services HTTP/1.1\r\nX-Slow: ");
  }
  for (int i = 0; i < streams; i += 2) {
    EXPECT_EQ(StatusLine(clients[i]->ReadUntil("\r\n\r\n", milliseconds(10000))),
              "HTTP/1.1 200 OK");
  }
  for (int i = 0; i < 20; ++i) {
    httplib::Result res = client_->Get("/v1/services");
    ASSERT_TRUE(res) << "request " << i;
    EXPECT_EQ(res->status, 200);
  }
  // Every stream gets a new event.
  daemon_.AddEvent("chat", "decision", "fan out");
  int delivered = 0;
  for (int i = 0; i < streams; i += 2) {
    delivered += clients[i]->ReadUntil("fan out", milliseconds(10000)).find("fan out") !=
                         std::string::npos
                     ? 1
                     : 0;
  }
  EXPECT_EQ(delivered, (streams + 1) / 2);
}

}  // namespace
}  // namespace gpuscale::api
