#include "scrape/scraper.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "metrics/metric_lookup.h"
#include "testing/loopback_server.h"
#include "testing/raw_socket.h"

namespace gpuscale::metrics {
namespace {

using ::testing::HasSubstr;

// /metrics, a malformed exposition and a slow one, on a loopback port.
class LocalServer : public testing::LoopbackServer {
 public:
  LocalServer() {
    server().Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 4\n",
                      "text/plain; version=0.0.4");
    });
    server().Get("/broken", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("good 1\nbad{ 2\n", "text/plain");
    });
    server().Get("/slow", [](const httplib::Request&, httplib::Response& res) {
      // Slower than the scrape's timeout, which runs on the real clock.
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
      res.set_content("late 1\n", "text/plain");
    });
    Start();
  }
};

TEST(ScraperTest, FetchesAndParsesExposition) {
  LocalServer server;
  ASSERT_GT(server.port(), 0);
  Result<Exposition> scraped = ScrapeMetrics(server.Url("/metrics"));
  ASSERT_TRUE(scraped) << scraped.error().ToString();
  EXPECT_EQ(*FindValue(*scraped, "vllm:num_requests_waiting"), 4);
}

// The pool gives each URL ScrapeMetrics' outcome, in order, and keeps its connections: a
// second tick over the same replica opens none.
TEST(ScraperTest, PoolScrapesEveryUrlInOrderOverKeptConnections) {
  LocalServer server;
  ScrapePool pool;
  const std::vector<std::string> urls = {server.Url("/metrics"), "ftp://nope", server.Url("/nope"),
                                         server.Url("/broken"), server.Url("/metrics")};
  for (int tick = 0; tick < 2; ++tick) {
    std::vector<Result<Exposition>> results = pool.ScrapeAll(urls);
    ASSERT_EQ(results.size(), urls.size());
    ASSERT_TRUE(results[0]) << results[0].error().ToString();
    EXPECT_EQ(*FindValue(*results[0], "vllm:num_requests_waiting"), 4);
    ASSERT_FALSE(results[1]);
    EXPECT_EQ(results[1].error().code, ErrorCode::kInvalidArgument);
    ASSERT_FALSE(results[2]);
    EXPECT_THAT(results[2].error().message, HasSubstr("returned HTTP 404"));
    ASSERT_TRUE(results[3]);
    EXPECT_EQ(results[3]->skipped_lines, 1);
    ASSERT_TRUE(results[4]);
  }
  const int64_t opened = pool.connections_opened();
  EXPECT_LE(opened, 4) << "at most one connection per scrape of the first tick";
  (void)pool.ScrapeAll(urls);
  EXPECT_EQ(pool.connections_opened(), opened) << "the third tick reuses them all";
}

TEST(ScraperTest, SkipsBadLinesByDefaultAndFailsWhenStrict) {
  LocalServer server;
  Result<Exposition> lenient = ScrapeMetrics(server.Url("/broken"));
  ASSERT_TRUE(lenient) << lenient.error().ToString();
  EXPECT_EQ(lenient->skipped_lines, 1);
  EXPECT_EQ(*FindValue(*lenient, "good"), 1);
  Result<Exposition> strict = ScrapeMetrics(server.Url("/broken"), ScrapeOptions{.parse = {}});
  ASSERT_FALSE(strict);
  EXPECT_EQ(strict.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(strict.error().ToString(), HasSubstr("line 2: "));
  EXPECT_THAT(strict.error().ToString(), HasSubstr("/broken"));
}

TEST(ScraperTest, NotFoundPathIsUnavailable) {
  LocalServer server;
  Result<Exposition> scraped = ScrapeMetrics(server.Url("/nope"));
  ASSERT_FALSE(scraped);
  EXPECT_EQ(scraped.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(scraped.error().message, HasSubstr("HTTP 404"));
}

TEST(ScraperTest, ClosedPortIsUnavailable) {
  std::string url;
  {
    LocalServer server;  // take a free port, then close it
    url = server.Url("/metrics");
  }
  Result<Exposition> scraped = ScrapeMetrics(url, ScrapeOptions{.timeout = Seconds{1}});
  ASSERT_FALSE(scraped);
  EXPECT_EQ(scraped.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(scraped.error().message, HasSubstr(url));
  EXPECT_THAT(scraped.error().message, HasSubstr("connection refused"));
}

TEST(ScraperTest, SlowEndpointTimesOutAsUnavailable) {
  LocalServer server;
  Result<Exposition> scraped =
      ScrapeMetrics(server.Url("/slow"), ScrapeOptions{.timeout = Seconds{0.1}});
  ASSERT_FALSE(scraped);
  EXPECT_EQ(scraped.error().code, ErrorCode::kUnavailable);
}

// The timeout bounds the whole scrape: a replica trickling its answer a byte per 100 ms (each
// read well inside any per-read timeout) must not hold the scrape, and so the control tick.
TEST(ScraperTest, ATricklingEndpointTimesOutWithinTheTimeout) {
  gpuscale::testing::TricklingServer trickler(
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n\n\n");
  ASSERT_GT(trickler.port(), 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(trickler.port()) + "/metrics";
  Result<Exposition> scraped = ScrapeMetrics(url, ScrapeOptions{.timeout = Seconds{0.3}});
  ASSERT_FALSE(scraped);
  EXPECT_EQ(scraped.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(scraped.error().message, ::testing::HasSubstr("timed out after 0.3 s"));
}

TEST(ScraperTest, OversizedBodyIsRefused) {
  LocalServer server;
  Result<Exposition> scraped =
      ScrapeMetrics(server.Url("/metrics"), ScrapeOptions{.max_body_bytes = 10});
  ASSERT_FALSE(scraped);
  EXPECT_EQ(scraped.error().code, ErrorCode::kResourceExhausted);
}

struct UrlCase {
  std::string url;
  bool ok;
  std::string host;
  int port;
  std::string path;
};

class ScrapeUrlTest : public ::testing::TestWithParam<UrlCase> {};

TEST_P(ScrapeUrlTest, SplitsOrRejects) {
  const UrlCase& c = GetParam();
  Result<ScrapeUrl> parsed = ParseScrapeUrl(c.url);
  ASSERT_EQ(parsed.has_value(), c.ok) << c.url;
  if (!c.ok) {
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(parsed.error().message, HasSubstr(c.url));
    return;
  }
  EXPECT_EQ(parsed->host, c.host);
  EXPECT_EQ(parsed->port, c.port);
  EXPECT_EQ(parsed->path, c.path);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ScrapeUrlTest,
    ::testing::Values(UrlCase{"http://127.0.0.1:8000/metrics", true, "127.0.0.1", 8000, "/metrics"},
                      UrlCase{"http://localhost", true, "localhost", 80, "/metrics"},
                      UrlCase{"http://h:9/a/b?x=1", true, "h", 9, "/a/b?x=1"},
                      UrlCase{"https://h/metrics", false, "", 0, ""},
                      UrlCase{"http://:80/metrics", false, "", 0, ""},
                      UrlCase{"http://h:0/", false, "", 0, ""},
                      UrlCase{"http://h:70000/", false, "", 0, ""},
                      UrlCase{"http://h:x/", false, "", 0, ""},
                      UrlCase{"127.0.0.1:8000", false, "", 0, ""}));

}  // namespace
}  // namespace gpuscale::metrics
