#include "scrape/scraper.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <exception>

#include "net/http_client.h"
#include "net/http_get_pool.h"

namespace gpuscale::metrics {
namespace {

constexpr std::string_view kScheme = "http://";

Unexpected<Error> BadUrl(std::string_view url, std::string_view why) {
  return InvalidArgument(
      fmt::format("invalid scrape URL '{}': {} (expected http://host[:port][/path])", url, why),
      "url");
}

}  // namespace

Result<ScrapeUrl> ParseScrapeUrl(std::string_view url) {
  if (!url.starts_with(kScheme)) return BadUrl(url, "only http:// is supported");
  std::string_view rest = url.substr(kScheme.size());
  ScrapeUrl out;
  size_t slash = rest.find('/');
  if (slash != std::string_view::npos) out.path = std::string(rest.substr(slash));
  std::string_view authority = rest.substr(0, slash);
  size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
    std::string_view port = authority.substr(colon + 1);
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), out.port);
    if (ec != std::errc() || ptr != port.data() + port.size() || out.port < 1 || out.port > 65535) {
      return BadUrl(url, "port must be a number in 1..65535");
    }
    authority = authority.substr(0, colon);
  }
  if (authority.empty()) return BadUrl(url, "missing host");
  out.host = std::string(authority);
  return out;
}

namespace {

net::HttpGetRequest ScrapeRequest(const ScrapeUrl& target, const ScrapeOptions& options) {
  net::HttpGetRequest request;
  request.host = target.host;
  request.port = target.port;
  request.target = target.path;
  request.headers = {{"Accept", "text/plain;version=0.0.4"}};
  request.timeout = options.timeout;  // the whole exchange, however slowly the replica sends
  request.max_body_bytes = options.max_body_bytes;
  return request;
}

// What a GET of `url` amounts to: the parsed body, or an error naming the URL.
Result<Exposition> ScrapeOutcome(std::string_view url, Result<net::HttpGetResponse> response,
                                 const ScrapeOptions& options) {
  if (!response) {
    if (response.error().code == ErrorCode::kResourceExhausted) {
      return ResourceExhausted(
          fmt::format("scrape of {} returned more than {} bytes", url, options.max_body_bytes));
    }
    return Unavailable(fmt::format("scrape of {} failed: {}", url, response.error().message));
  }
  if (response->status != 200) {
    return Unavailable(
        fmt::format("scrape of {} returned HTTP {} (expected 200)", url, response->status));
  }
  Result<Exposition> parsed = ParsePrometheusText(response->body, options.parse);
  if (!parsed) {
    Error error = std::move(parsed).error();
    error.message = fmt::format("{} (in the body of {})", error.message, url);
    return Unexpected<Error>(std::move(error));
  }
  return parsed;
}

}  // namespace

Result<Exposition> ScrapeMetrics(std::string_view url, const ScrapeOptions& options) {
  GS_ASSIGN_OR_RETURN(ScrapeUrl target, ParseScrapeUrl(url));
  return ScrapeOutcome(url, net::HttpGet(ScrapeRequest(target, options)), options);
}

ScrapePool::ScrapePool(size_t max_in_flight) {
  net::HttpGetPoolOptions options;
  options.max_in_flight = max_in_flight;
  // A replica is scraped once a tick; a slow tick (10,000 replicas) must not outlast the kept
  // connections, or every scrape reconnects and the next tick is slower still. Kept as long
  // as Go's HTTP client keeps Prometheus's (90 s): a server that closed one meanwhile (uvicorn
  // after 5 s) costs one retry on a fresh connection, which HttpGetPool does.
  options.idle_timeout = Seconds{90};
  pool_ = std::make_unique<net::HttpGetPool>(options);
}

ScrapePool::~ScrapePool() = default;

std::vector<Result<Exposition>> ScrapePool::ScrapeAll(const std::vector<std::string>& urls,
                                                      const ScrapeOptions& options) {
  std::vector<Result<Exposition>> results(urls.size(), Unavailable("not scraped"));
  std::vector<net::HttpGetRequest> requests;
  std::vector<size_t> positions;  // of each request in `urls`
  for (size_t i = 0; i < urls.size(); ++i) {
    Result<ScrapeUrl> target = ParseScrapeUrl(urls[i]);
    if (!target) {
      results[i] = Unexpected<Error>(target.error());
      continue;
    }
    requests.push_back(ScrapeRequest(*target, options));
    positions.push_back(i);
  }
  std::vector<Result<net::HttpGetResponse>> responses = pool_->GetAll(requests);
  for (size_t r = 0; r < responses.size(); ++r) {
    const size_t i = positions[r];
    results[i] = ScrapeOutcome(urls[i], std::move(responses[r]), options);
  }
  return results;
}

void ScrapePool::Submit(std::string url, const ScrapeOptions& options,
                        std::function<void(Result<Exposition>)> done) {
  Result<ScrapeUrl> target = ParseScrapeUrl(url);
  if (!target) {
    done(Unexpected<Error>(target.error()));
    return;
  }
  net::HttpGetRequest request = ScrapeRequest(*target, options);
  pool_->Submit(std::move(request), [url = std::move(url), options, done = std::move(done)](
                                        Result<net::HttpGetResponse> response) {
    done(ScrapeOutcome(url, std::move(response), options));
  });
}

void ScrapePool::Run(std::chrono::steady_clock::time_point deadline,
                     const std::function<bool()>& finished) {
  pool_->Run(deadline, finished);
}

size_t ScrapePool::pending() const { return pool_->pending(); }

int64_t ScrapePool::connections_opened() const { return pool_->connections_opened(); }

}  // namespace gpuscale::metrics
