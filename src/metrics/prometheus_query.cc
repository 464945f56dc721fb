// Prometheus HTTP API, instant queries
// (https://prometheus.io/docs/prometheus/latest/querying/api/):
//   {"status":"success","data":{"resultType":"vector",
//                               "result":[{"metric":{...},"value":[<unix time>,"<value>"]}]}}
//   {"status":"error","errorType":"bad_data","error":"..."}
// Sample values are strings so that NaN and +-Inf survive JSON.
#include "metrics/prometheus_query.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <exception>
#include <nlohmann/json.hpp>

#include "metrics/prometheus_text_parser.h"
#include "metrics/scraper.h"

namespace gpuscale::metrics {
namespace {

using Json = nlohmann::json;

Unexpected<Error> Shape(std::string_view field, std::string_view expected) {
  return InvalidArgument(fmt::format("unexpected Prometheus API response: expected {}", expected),
                         std::string(field));
}

// One [<unix time>, "<value>"] pair (a scalar result, or a vector sample's "value").
Result<double> ParseSamplePair(const Json& pair, std::string_view field) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_string()) {
    return Shape(field, "[<unix time>, \"<value>\"]");
  }
  auto value = ParsePrometheusValue(pair[1].get_ref<const std::string&>());
  if (!value) return Shape(field, "a number as a string (or NaN, +Inf, -Inf)");
  return *value;
}

Result<double> ReduceVector(const Json& result) {
  if (result.empty()) {
    return NotFound(
        "query returned no samples (the series does not exist yet or has no "
        "recent data)");
  }
  if (result.size() > 1) {
    return InvalidArgument(fmt::format("query returned {} samples, expected one; aggregate it, "
                                       "e.g. sum(...) or avg(...)",
                                       result.size()),
                           "query");
  }
  if (!result[0].is_object() || !result[0].contains("value")) {
    return Shape("data.result[0]", "an object with \"value\"");
  }
  return ParseSamplePair(result[0]["value"], "data.result[0].value");
}

// The server's {"errorType", "error"}, as far as the body has them.
std::string ServerError(const Json& body) {
  const auto text = [&](const char* key) -> std::string {
    return body.is_object() && body.contains(key) && body[key].is_string()
               ? body[key].get<std::string>()
               : "";
  };
  const std::string type = text("errorType");
  const std::string message = text("error");
  if (type.empty()) return message.empty() ? "no error message" : message;
  return fmt::format("{}: {}", type, message.empty() ? "no error message" : message);
}

}  // namespace

Result<double> ParsePrometheusQueryResponse(std::string_view body) {
  const Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded())
    return InvalidArgument("Prometheus API response is not valid JSON", "body");
  if (!json.is_object() || !json.contains("status") || !json["status"].is_string()) {
    return Shape("status", "an object with \"status\"");
  }
  if (json["status"] != "success") {
    return Unavailable(fmt::format("Prometheus query failed: {}", ServerError(json)));
  }
  if (!json.contains("data") || !json["data"].is_object()) return Shape("data", "an object");
  const Json& data = json["data"];
  if (!data.contains("resultType") || !data["resultType"].is_string()) {
    return Shape("data.resultType", "a string");
  }
  const std::string& type = data["resultType"].get_ref<const std::string&>();
  if (!data.contains("result")) return Shape("data.result", "a result");
  const Json& result = data["result"];
  if (type == "scalar") return ParseSamplePair(result, "data.result");
  if (type == "vector") {
    if (!result.is_array()) return Shape("data.result", "a list of samples");
    return ReduceVector(result);
  }
  return InvalidArgument(fmt::format("query returned a {}, expected an instant vector or scalar "
                                     "(drop the range selector [..] or wrap it in a function such "
                                     "as rate())",
                                     type),
                         "query");
}

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
  const Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  const std::string server = json.is_discarded() ? body.substr(0, 200) : ServerError(json);
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
