// GET /v1/events (query validation, data as JSON) and the live SSE stream.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "api/event_stream.h"
#include "testing/api_test_util.h"
#include "testing/wait_until.h"

namespace gpuscale::api {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST_F(ApiServerTest, ListsEventsWithFilters) {
  daemon_.AddEvent("chat", "decision", "scale to 2", R"({"desired": 2})");
  daemon_.AddEvent("batch", "replica_started", "batch-1 started", "not json");
  daemon_.AddEvent("chat", "replica_started", "chat-1 started");
  httplib::Result all = client_->Get("/v1/events");
  ASSERT_EQ(all->status, 200);
  json body = Body(all);
  ASSERT_EQ(body["events"].size(), 3u);
  EXPECT_EQ(body["last_id"], 3);
  EXPECT_EQ(body["events"][0]["data"], json({{"desired", 2}}));
  EXPECT_EQ(body["events"][1]["data"], "not json");
  EXPECT_TRUE(body["events"][2]["data"].is_null());
  EXPECT_EQ(body["events"][0]["at"], "2023-11-14T22:13:21.000Z");

  httplib::Result filtered = client_->Get("/v1/events?since_id=1&service=chat&limit=5");
  ASSERT_EQ(filtered->status, 200);
  ASSERT_EQ(Body(filtered)["events"].size(), 1u);
  EXPECT_EQ(Body(filtered)["events"][0]["id"], 3);
  EXPECT_EQ(daemon_.last_event_query().limit, 5);
  EXPECT_EQ(Body(client_->Get("/v1/events?kind=decision"))["events"].size(), 1u);
}

TEST_F(ApiServerTest, BadEventQueryIs400NamingTheParameter) {
  for (const auto& [query, field] :
       std::vector<std::pair<std::string, std::string>>{{"limit=0", "limit"},
                                                        {"limit=10001", "limit"},
                                                        {"limit=x", "limit"},
                                                        {"since_id=-1", "since_id"},
                                                        {"since_id=1e3", "since_id"},
                                                        {"kind=replica_exploded", "kind"}}) {
    httplib::Result res = client_->Get(("/v1/events?" + query).c_str());
    EXPECT_EQ(res->status, 400) << query;
    EXPECT_EQ(ErrorOf(res)["field"], field) << query;
  }
}

// ?kind= is read with the event kinds' name table: an unknown kind is refused on both the
// list and the stream, naming the known kinds; an empty one still means every kind.
TEST_F(ApiServerTest, UnknownEventKindIs400ListingTheKnownKinds) {
  for (const char* path :
       {"/v1/events?kind=replica_exploded", "/v1/events/stream?kind=replica_exploded"}) {
    httplib::Result res = client_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 400) << path;
    EXPECT_EQ(ErrorOf(res)["field"], "kind") << path;
    const std::string message = ErrorOf(res)["message"];
    EXPECT_THAT(message, HasSubstr("unknown event kind 'replica_exploded'")) << path;
    EXPECT_THAT(message, HasSubstr("replica_started")) << path;
  }
  httplib::Result all = client_->Get("/v1/events?kind=");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->status, 200);
  EXPECT_FALSE(daemon_.last_event_query().kind.has_value());
  ASSERT_EQ(client_->Get("/v1/events?kind=replica_crashed")->status, 200);
  EXPECT_EQ(daemon_.last_event_query().kind, events::EventKind::kReplicaCrashed);
}

// The kind list is the daemon's name table less the stream-only gateway_stats: kinds that
// ?kind= accepts.
TEST_F(ApiServerTest, EventKindsListsEveryKindTheFilterAccepts) {
  httplib::Result res = client_->Get("/v1/events/kinds");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const json kinds = Body(res)["kinds"];
  ASSERT_EQ(kinds.size(), static_cast<size_t>(events::kEventKindCount - 1));
  EXPECT_EQ(kinds.front(), std::string(events::EventKindName(events::AllEventKinds().front())));
  for (const json& kind : kinds) {
    const std::string name = kind;
    EXPECT_EQ(client_->Get(("/v1/events?kind=" + name).c_str())->status, 200) << name;
  }
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "replica_crashed"), kinds.end());
  EXPECT_EQ(std::find(kinds.begin(), kinds.end(), "gateway_stats"), kinds.end());
}

// Reads an SSE response until `done` says stop; collects the raw text.
struct SseReader {
  std::mutex mu;
  std::string text;
  std::atomic<bool> stop{false};

  bool Append(const char* data, size_t size) {
    std::lock_guard lock(mu);
    text.append(data, size);
    return !stop.load();
  }
  std::string Text() {
    std::lock_guard lock(mu);
    return text;
  }
  // Waits (bounded, so that a bug fails instead of hanging) until `needle` arrived.
  bool WaitFor(const std::string& needle) {
    return gpuscale::testing::WaitUntil([&] { return Text().find(needle) != std::string::npos; });
  }
  // Opens the stream on a thread and returns once its response headers arrived (the
  // server has then chosen its starting point).
  std::thread Open(int port, std::string path, httplib::Headers headers = {}) {
    std::thread thread([this, port, path, headers] {
      httplib::Client client("127.0.0.1", port);
      client.set_read_timeout(30, 0);
      client.Get(
          path.c_str(), headers,
          [this](const httplib::Response& res) {
            std::lock_guard lock(mu);
            content_type = res.get_header_value("Content-Type");
            connected = true;
            return true;
          },
          [this](const char* data, size_t size) { return Append(data, size); });
      returned = true;
    });
    gpuscale::testing::WaitUntil([this] { return connected || returned; });
    return thread;
  }

  std::string content_type;  // guarded by mu
  std::atomic<bool> connected{false};
  std::atomic<bool> returned{false};
};

TEST_F(ApiServerTest, StreamsLiveEventsAsSse) {
  daemon_.AddEvent("chat", "decision", "old event, before the stream");
  SseReader reader;
  std::thread client = reader.Open(port_, "/v1/events/stream");
  EXPECT_TRUE(reader.connected.load());
  // Events appended after connecting arrive; the old one is not replayed.
  daemon_.AddEvent("chat", "replica_started", "chat-1 started", R"({"port": 8001})");
  daemon_.AddEvent("chat", "decision", "scale to 2");
  EXPECT_TRUE(reader.WaitFor("id: 3\n"));
  reader.stop = true;
  daemon_.AddEvent("chat", "decision", "wake the stream so the client can leave");
  client.join();
  const std::string text = reader.Text();
  EXPECT_EQ(reader.content_type, "text/event-stream");
  EXPECT_EQ(text.find("old event"), std::string::npos);
  const std::string first = "id: 2\nevent: replica_started\ndata: {\"id\":2,";
  EXPECT_NE(text.find(first), std::string::npos) << text;
  EXPECT_NE(text.find("\"data\":{\"port\":8001}}\n\n"), std::string::npos) << text;
  EXPECT_LT(text.find("id: 2\n"), text.find("id: 3\n"));
}

TEST_F(ApiServerTest, StreamResumesFromLastEventId) {
  for (int i = 0; i < 4; ++i) daemon_.AddEvent("chat", "decision", "event");
  SseReader reader;
  std::thread client = reader.Open(port_, "/v1/events/stream", {{"Last-Event-ID", "2"}});
  EXPECT_TRUE(reader.WaitFor("id: 4\n"));
  reader.stop = true;
  daemon_.AddEvent("chat", "decision", "wake");
  client.join();
  EXPECT_EQ(reader.Text().find("id: 2\n"), std::string::npos);
  EXPECT_NE(reader.Text().find("id: 3\n"), std::string::npos);
}

TEST_F(ApiServerTest, StreamFiltersBySinceIdAndKind) {
  daemon_.AddEvent("chat", "decision", "one");
  daemon_.AddEvent("chat", "replica_started", "two");
  daemon_.AddEvent("chat", "decision", "three");
  SseReader reader;
  std::thread client = reader.Open(port_, "/v1/events/stream?since_id=0&kind=decision");
  EXPECT_TRUE(reader.WaitFor("id: 3\n"));
  reader.stop = true;
  daemon_.AddEvent("chat", "decision", "wake");
  client.join();
  EXPECT_NE(reader.Text().find("id: 1\n"), std::string::npos);
  EXPECT_EQ(reader.Text().find("id: 2\n"), std::string::npos);
}

TEST_F(ApiServerTest, StopEndsOpenStreams) {
  SseReader reader;
  std::thread client = reader.Open(port_, "/v1/events/stream");
  EXPECT_TRUE(reader.connected.load());
  server_->Stop();  // would hang (until the client's 30 s timeout) if streams did not end
  client.join();
  EXPECT_TRUE(reader.returned.load());
}

class ApiServerKeepaliveTest : public ApiServerTest {
 protected:
  void SetUp() override { StartServer({.sse_keepalive = Seconds{0.05}}); }
};

TEST_F(ApiServerKeepaliveTest, IdleStreamSendsKeepaliveComments) {
  SseReader reader;
  std::thread client = reader.Open(port_, "/v1/events/stream");
  EXPECT_TRUE(reader.WaitFor(": keepalive\n\n"));
  reader.stop = true;
  client.join();
}

TEST(EventStreamTest, FormatsOneEventPerSseBlock) {
  daemon::EventView event;
  event.id = 7;
  event.at = Seconds{1700000000.0};
  event.kind = "decision";
  event.message = "line one\nline two";
  const std::string text = FormatSseEvent(event);
  EXPECT_EQ(text.rfind("id: 7\nevent: decision\ndata: {", 0), 0u) << text;
  EXPECT_EQ(text.substr(text.size() - 3), "}\n\n");
  // The message's newline is escaped inside the JSON, so the data stays one line.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);
}

TEST(EventStreamTest, SkipsFilteredOutIdsWithoutSpinning) {
  FakeDaemonApi daemon;
  daemon.AddEvent("other", "decision", "filtered out");
  daemon::EventQuery filter;
  filter.service = "chat";
  EventStreamOptions options;
  options.poll = Seconds{0};
  options.keepalive = Seconds{3600};
  EventStream stream(daemon, filter, options);
  Result<std::string> text = stream.Poll();
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, "");
  EXPECT_EQ(stream.last_id(), 1);
}

TEST(EventStreamTest, GatewayStatsEventCarriesEachServiceWithFigures) {
  daemon::ServiceView chat, batch;
  chat.config.name = "chat";
  chat.gateway.emplace();
  chat.gateway->requests_total = 12;
  chat.gateway->in_flight = 3;
  chat.gateway->request_rate = 1.5;
  batch.config.name = "batch";  // no gateway figures: left out
  const std::string text = FormatGatewayStats({chat, batch}, "");
  ASSERT_EQ(text.rfind("event: gateway_stats\ndata: {", 0), 0u) << text;
  EXPECT_EQ(text.find("id:"), std::string::npos) << "not stored, no resume id";
  const json data = json::parse(text.substr(text.find('{'), text.rfind('}') - text.find('{') + 1));
  ASSERT_TRUE(data["services"].contains("chat"));
  EXPECT_FALSE(data["services"].contains("batch"));
  EXPECT_EQ(data["services"]["chat"]["requests_total"], 12);
  EXPECT_EQ(data["services"]["chat"]["in_flight"], 3);
  EXPECT_EQ(data["services"]["chat"]["request_rate_per_second"], 1.5);
  EXPECT_TRUE(data["services"]["chat"]["ttft_p50_seconds"].is_null());
  EXPECT_TRUE(data["services"]["chat"]["added_latency_p99_seconds"].is_null());
  EXPECT_EQ(FormatGatewayStats({chat}, "batch"), "") << "the stream's service filter applies";
  EXPECT_EQ(FormatGatewayStats({batch}, ""), "");
}

}  // namespace
}  // namespace gpuscale::api
