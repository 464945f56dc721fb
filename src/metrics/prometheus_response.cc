// Prometheus HTTP API, instant queries
// (https://prometheus.io/docs/prometheus/latest/querying/api/):
//   {"status":"success","data":{"resultType":"vector",
//                               "result":[{"metric":{...},"value":[<unix time>,"<value>"]}]}}
//   {"status":"error","errorType":"bad_data","error":"..."}
// Sample values are strings so that NaN and +-Inf survive JSON.
#include "metrics/prometheus_response.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "metrics/prometheus_text_parser.h"

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

std::string PrometheusServerError(std::string_view body) {
  const Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  // Not JSON (a proxy's HTML page, say): its start is the best message there is.
  if (json.is_discarded()) return std::string(body.substr(0, 200));
  return ServerError(json);
}

}  // namespace gpuscale::metrics
