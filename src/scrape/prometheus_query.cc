// Prometheus HTTP API client, instant queries
// (https://prometheus.io/docs/prometheus/latest/querying/api/): the request and the mapping
// of HTTP failures; metrics/prometheus_response.h reads the body.
#include "scrape/prometheus_query.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <exception>

#include "metrics/prometheus_response.h"
#include "scrape/scraper.h"

namespace gpuscale::metrics {
namespace {

// The API base path: what follows host[:port] in the server URL, without a trailing '/'.
std::string PathPrefix(std::string_view url) {
  std::string_view rest = url.substr(std::string_view("http://").size());
  const size_t slash = rest.find('/');
  std::string prefix = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return prefix;
}

// Maps a non-200 answer to an error naming the URL and the server's message.
Unexpected<Error> HttpError(std::string_view url, int status, const std::string& body) {
  const std::string server = PrometheusServerError(body);
  if (status == 400 || status == 422) {  // bad PromQL / cannot be executed
    return InvalidArgument(
        fmt::format("Prometheus at {} rejected the query (HTTP {}): {}", url, status, server),
        "query");
  }
  if (status == 404) {
    return InvalidArgument(fmt::format("Prometheus at {} answered HTTP 404 for /api/v1/query; "
                                       "check the URL (and its path prefix)",
                                       url),
                           "url");
  }
  return Unavailable(fmt::format("Prometheus at {} answered HTTP {}: {}", url, status, server));
}

}  // namespace

Result<double> QueryPrometheus(std::string_view server_url, std::string_view promql,
                               const PrometheusQueryOptions& options) {
  auto target = ParseScrapeUrl(server_url);
  if (!target) {
    return InvalidArgument(fmt::format("invalid Prometheus URL '{}': expected "
                                       "http://host[:port][/prefix]",
                                       server_url),
                           "url");
  }
  const std::string path = PathPrefix(server_url) + "/api/v1/query";
  try {
    httplib::Client client(target->host, target->port);
    const auto timeout = std::chrono::duration_cast<std::chrono::microseconds>(options.timeout);
    client.set_connection_timeout(timeout);
    client.set_read_timeout(timeout);
    client.set_write_timeout(timeout);
    httplib::Headers headers;
    if (!options.bearer_token.empty()) {
      headers.emplace("Authorization", "Bearer " + options.bearer_token);
    }
    const httplib::Params params = {{"query", std::string(promql)}};  // URL-encoded by httplib
    httplib::Result result = client.Get(path, params, headers);
    if (!result) {
      return Unavailable(fmt::format("cannot query Prometheus at {}: {} (timeout {}s)", server_url,
                                     httplib::to_string(result.error()), options.timeout.count()));
    }
    if (result->status != 200) return HttpError(server_url, result->status, result->body);
    return ParsePrometheusQueryResponse(result->body);
  } catch (const std::exception& e) {  // no exception crosses the module boundary
    return Unavailable(fmt::format("cannot query Prometheus at {}: {}", server_url, e.what()));
  }
}

}  // namespace gpuscale::metrics
