#include "api/request_parsing.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/policy_config.h"
#include "config/task_definition.h"
#include "events/event_kind.h"
#include "scale/enum_names.h"
#include "scale/policy_util.h"
#include "scale/rules_policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::api {
namespace {

constexpr int64_t kMaxHistorySeconds = 86400;
constexpr int kMaxEventLimit = 10000;

// 1-based line and column of a JSON syntax error. nlohmann reports how many bytes it read;
// the last of them is where it gave up, unless that was trailing whitespace or the end of
// the text, in which case the last non-blank character read is the culprit.
std::pair<int, int> LineColumn(std::string_view text, size_t bytes_read) {
  size_t pos = std::min(bytes_read > 0 ? bytes_read - 1 : 0, text.size());
  while (pos > 0 && (pos == text.size() || std::isspace(static_cast<unsigned char>(text[pos])))) {
    --pos;
  }
  int line = 1;
  int column = 1;
  for (size_t i = 0; i < pos; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

// nlohmann's what() starts with "[json.exception.parse_error.101] parse error at line 1,
// column 2: "; keep only the explanation after the position.
std::string Explanation(const std::string& what) {
  const size_t colon = what.find(": ");
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

// Deeper bodies are refused: no valid body nests beyond a few levels, and the YAML parser
// and JSON serializer recurse once per level.
constexpr int kMaxJsonDepth = 64;

Result<nlohmann::json> ParseJsonObject(std::string_view body) {
  nlohmann::json value;
  int deepest = 0;
  // JSON allows a key twice and nlohmann keeps the last; a client that sends
  // {"replicas": 1, "replicas": 9} meant something, so the body is refused naming the key.
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::string duplicate;
  try {
    value = nlohmann::json::parse(body, [&](int depth, nlohmann::json::parse_event_t event,
                                            nlohmann::json& parsed) {
      using Event = nlohmann::json::parse_event_t;
      deepest = std::max(deepest, depth);
      if (event == Event::object_start) keys.emplace_back();
      if (event == Event::object_end && !keys.empty()) keys.pop_back();
      if (event == Event::key && !keys.empty() && parsed.is_string() &&
          !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
        duplicate = parsed.get<std::string>();
      }
      return true;
    });
  } catch (const nlohmann::json::parse_error& e) {
    const auto [line, column] = LineColumn(body, e.byte);
    return InvalidArgument(fmt::format("malformed JSON at line {}, column {}: {}", line, column,
                                       Explanation(e.what())),
                           "body");
  } catch (const std::exception& e) {
    return InvalidArgument(fmt::format("malformed JSON: {}", e.what()), "body");
  }
  if (!duplicate.empty()) {
    return InvalidArgument(fmt::format("key '{}' appears twice in one JSON object", duplicate),
                           duplicate);
  }
  if (deepest > kMaxJsonDepth) {
    return InvalidArgument(fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth), "body");
  }
  if (!value.is_object()) {
    return InvalidArgument(
        fmt::format("expected a JSON object ({{...}}), got a JSON {}", value.type_name()), "body");
  }
  return value;
}

// Reads and removes the API-only keys of a rule body (`enabled`, and `source: prometheus`,
// which the policy-file parser does not accept because policy files cannot name a
// Prometheus server), so that config::ParseScalingRule validates the rest.
Status TakeApiOnlyRuleKeys(YAML::Node& node, daemon::RuleView& rule, bool& prometheus) {
  GS_ASSIGN_OR_RETURN(rule.enabled, yaml::ReadBool(node, "enabled", "", true));
  node.remove("enabled");
  prometheus = false;
  const YAML::Node source = std::as_const(node)["source"];  // const: no lookup side effect
  if (source.IsDefined() && source.IsScalar() && source.Scalar() == "prometheus") {
    prometheus = true;
    node.remove("source");
  }
  return OkStatus();
}

Result<int64_t> ParseIntParam(const QueryParams& params, const std::string& name, int64_t fallback,
                              int64_t min, int64_t max) {
  auto it = params.find(name);
  if (it == params.end()) return fallback;
  Result<int64_t> value = ParseNonNegativeInt(it->second, name);
  if (!value || *value < min || *value > max) {
    return InvalidArgument(
        fmt::format("expected an integer in {}..{}, got '{}'", min, max, it->second), name);
  }
  return *value;
}

}  // namespace

Status CheckJsonObject(std::string_view body) {
  GS_RETURN_IF_ERROR(ParseJsonObject(body));
  return OkStatus();
}

namespace {

// A body that is a JSON object, as a YAML node for the config parsers (JSON is YAML, which
// keeps their field and line errors). JSON's whitespace includes a lone carriage return,
// which yaml-cpp does not read as a line break (it took "\r{\r}" for a scalar): line breaks
// are normalized first; raw CRs cannot occur inside JSON strings.
Result<YAML::Node> ParseJsonObjectAsYaml(std::string_view body) {
  GS_RETURN_IF_ERROR(CheckJsonObject(body));
  std::string text;
  text.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\r') {
      text += body[i];
    } else if (i + 1 == body.size() || body[i + 1] != '\n') {
      text += '\n';
    }
  }
  GS_ASSIGN_OR_RETURN(YAML::Node node, yaml::ParseYaml(text, "request body"));
  if (!node.IsMap()) return InvalidArgument("expected a JSON object", "body");  // defence
  return node;
}

}  // namespace

Result<daemon::ServiceConfig> ParseServiceBody(std::string_view body,
                                               const std::string& path_name) {
  GS_ASSIGN_OR_RETURN(YAML::Node node, ParseJsonObjectAsYaml(body));
  if (path_name.empty()) return daemon::ParseServiceConfig(node, "");
  const YAML::Node name = std::as_const(node)["name"];
  if (!name.IsDefined() || name.IsNull()) {
    node["name"] = path_name;
  } else if (!name.IsScalar() || name.Scalar() != path_name) {
    return InvalidArgument(
        fmt::format("must match the service in the path ('{}'), got '{}' (or leave it out)",
                    path_name, name.IsScalar() ? name.Scalar() : std::string("a non-scalar")),
        "name");
  }
  return daemon::ParseServiceConfig(node, "");
}

Result<daemon::RuleView> ParseRuleBody(std::string_view body,
                                       const daemon::ServiceConfig& service) {
  GS_ASSIGN_OR_RETURN(YAML::Node node, ParseJsonObjectAsYaml(body));
  daemon::RuleView rule;
  bool prometheus = false;
  GS_RETURN_IF_ERROR(TakeApiOnlyRuleKeys(node, rule, prometheus));
  const YAML::Node name = std::as_const(node)["name"];
  if (!name.IsDefined() || !name.IsScalar() || name.Scalar().empty()) {
    return yaml::FieldError(name, "name", "required: a name for the rule, shown in decisions");
  }
  const config::CommonPolicyFields common{service.min_replicas, service.max_replicas};
  GS_ASSIGN_OR_RETURN(scale::ScalingRule parsed, config::ParseScalingRule(node, "", common));
  rule.service = service.name;
  rule.name = parsed.name;
  rule.source = prometheus ? "prometheus" : std::string(scale::MetricSourceName(parsed.source));
  rule.metric = parsed.metric;
  rule.aggregation = std::string(scale::AggregationName(parsed.aggregation));
  rule.comparator = std::string(scale::ComparatorName(parsed.comparator));
  rule.threshold = parsed.threshold;
  rule.step_size = parsed.step_size;
  rule.cooldown = parsed.cooldown;
  rule.min_replicas = parsed.min_replicas;
  rule.max_replicas = parsed.max_replicas;
  return rule;
}

Result<std::optional<int>> ParseReplicasBody(std::string_view body) {
  GS_ASSIGN_OR_RETURN(nlohmann::json object, ParseJsonObject(body));
  for (const auto& [key, value] : object.items()) {
    if (key != "replicas") {
      return InvalidArgument(fmt::format("unknown field '{}'; expected only 'replicas'", key), key);
    }
  }
  if (!object.contains("replicas")) {
    return InvalidArgument("required: an integer >= 0, or null to return control to the policy",
                           "replicas");
  }
  const nlohmann::json& replicas = object["replicas"];
  if (replicas.is_null()) return std::optional<int>();
  if (!replicas.is_number_integer() || replicas.get<int64_t>() < 0 ||
      replicas.get<int64_t>() > std::numeric_limits<int>::max()) {
    // Echo short scalars only: the value may be a megabyte of text or of nesting.
    const std::string got = replicas.is_primitive() && replicas.dump().size() <= 40
                                ? replicas.dump()
                                : fmt::format("a JSON {}", replicas.type_name());
    return InvalidArgument(fmt::format("expected an integer >= 0 or null, got {}", got),
                           "replicas");
  }
  return std::optional<int>(static_cast<int>(replicas.get<int64_t>()));
}

Result<std::optional<Seconds>> ParsePreemptBody(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return std::nullopt;
  GS_ASSIGN_OR_RETURN(nlohmann::json object, ParseJsonObject(body));
  for (const auto& [key, value] : object.items()) {
    if (key != "notice_seconds") {
      return InvalidArgument(fmt::format("unknown field '{}'; expected only 'notice_seconds'", key),
                             key);
    }
  }
  if (!object.contains("notice_seconds")) return std::nullopt;
  const nlohmann::json& notice = object["notice_seconds"];
  if (!notice.is_number() || !(notice.get<double>() >= 0) || notice.get<double>() > 86400) {
    return InvalidArgument("expected a number of seconds in [0, 86400]", "notice_seconds");
  }
  return std::optional<Seconds>(Seconds{notice.get<double>()});
}

Result<Seconds> ParseHistoryWindow(const QueryParams& params) {
  GS_ASSIGN_OR_RETURN(int64_t seconds,
                      ParseIntParam(params, "seconds", 300, 1, kMaxHistorySeconds));
  return Seconds{static_cast<double>(seconds)};
}

namespace {

// A finite number of seconds >= 0; nullopt when the parameter is absent.
Result<std::optional<Seconds>> ParseSecondsParam(const QueryParams& params,
                                                 const std::string& name) {
  auto it = params.find(name);
  if (it == params.end()) return std::optional<Seconds>();
  const std::string& text = it->second;
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value) ||
      value < 0) {
    return InvalidArgument(fmt::format("expected a number of seconds >= 0, got '{}'", text),
                           name);
  }
  return std::optional<Seconds>(Seconds{value});
}

}  // namespace

Result<HistoryRange> ParseHistoryRange(const QueryParams& params) {
  HistoryRange range;
  GS_ASSIGN_OR_RETURN(range.to, ParseSecondsParam(params, "to"));
  GS_ASSIGN_OR_RETURN(range.from, ParseSecondsParam(params, "from"));
  GS_ASSIGN_OR_RETURN(std::optional<Seconds> step, ParseSecondsParam(params, "step"));
  range.step = step.value_or(Seconds{0});
  return range;
}

Result<daemon::EventQuery> ParseEventQuery(const QueryParams& params) {
  daemon::EventQuery query;
  GS_ASSIGN_OR_RETURN(query.since_id,
                      ParseIntParam(params, "since_id", 0, 0, std::numeric_limits<int64_t>::max()));
  GS_ASSIGN_OR_RETURN(int64_t limit, ParseIntParam(params, "limit", 100, 1, kMaxEventLimit));
  query.limit = static_cast<int>(limit);
  if (auto it = params.find("service"); it != params.end()) query.service = it->second;
  // An empty ?kind= matches every kind, as it did when the filter was text.
  if (auto it = params.find("kind"); it != params.end() && !it->second.empty()) {
    GS_ASSIGN_OR_RETURN(query.kind, events::ParseEventKind(it->second, "kind"));
  }
  return query;
}

namespace {

// The media type of a Content-Type header, lower case, without parameters or blanks.
std::string MediaType(std::string_view content_type) {
  std::string type(content_type.substr(0, content_type.find(';')));
  std::erase_if(type, [](unsigned char c) { return std::isspace(c) != 0; });
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return type;
}

bool IsJsonBody(std::string_view body, std::string_view content_type) {
  const std::string type = MediaType(content_type);
  if (type == "application/yaml" || type == "text/yaml" || type == "application/x-yaml") {
    return false;
  }
  if (type == "application/json") return true;
  const size_t first = body.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && body[first] == '{';
}

}  // namespace

Result<task::TaskDefinition> ParseTaskBody(std::string_view body, std::string_view content_type) {
  // JSON first through nlohmann: its syntax errors name the line and column, where the YAML
  // parser would report a JSON typo less precisely.
  if (IsJsonBody(body, content_type)) GS_RETURN_IF_ERROR(CheckJsonObject(body));
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return InvalidArgument("empty body; expected a task definition (YAML or JSON)", "body");
  }
  return config::ParseTaskDefinitionText(body, "request body");
}

Result<int64_t> ParsePositiveId(std::string_view text, std::string_view field,
                                std::string_view what) {
  Result<int64_t> id = ParseNonNegativeInt(text, field);
  if (!id || *id == 0) {
    return InvalidArgument(
        fmt::format("expected a {} id (an integer >= 1), got '{}'", what, text),
        std::string(field));
  }
  return id;
}

Result<int64_t> ParseNonNegativeInt(std::string_view text, std::string_view field) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || text[0] == '-' || ec != std::errc() || ptr != end) {
    return InvalidArgument(fmt::format("expected a non-negative integer, got '{}'", text),
                           std::string(field));
  }
  return value;
}

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+' && plus_is_space) {
      out += ' ';
    } else if (c != '%') {
      out += c;
    } else {
      if (i + 2 >= text.size() || HexValue(text[i + 1]) < 0 || HexValue(text[i + 2]) < 0) {
        return InvalidArgument(
            fmt::format("bad percent escape at offset {} of '{}'", i, text), "target");
      }
      const char decoded = static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2]));
      if (decoded == '\0') {
        return InvalidArgument(fmt::format("'{}' decodes to a NUL byte", text), "target");
      }
      out += decoded;
      i += 2;
    }
  }
  return out;
}

}  // namespace

Result<RequestTarget> ParseTarget(std::string_view target) {
  if (target.empty() || target.front() != '/') {
    return InvalidArgument(
        fmt::format("expected a target starting with '/', got '{}'", target.substr(0, 64)),
        "target");
  }
  for (size_t i = 0; i < target.size(); ++i) {
    const auto c = static_cast<unsigned char>(target[i]);
    if (c < 0x20 || c == 0x7f) {  // control bytes (NUL included) have no place in a URL
      return InvalidArgument(fmt::format("control byte 0x{:02x} at offset {} of the target", c, i),
                             "target");
    }
  }
  const size_t question = target.find('?');
  RequestTarget out;
  GS_ASSIGN_OR_RETURN(out.path, PercentDecode(target.substr(0, question), false));
  if (question == std::string_view::npos) return out;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    GS_ASSIGN_OR_RETURN(std::string name, PercentDecode(pair.substr(0, eq), true));
    std::string value;
    if (eq != std::string_view::npos) {
      GS_ASSIGN_OR_RETURN(value, PercentDecode(pair.substr(eq + 1), true));
    }
    out.params.emplace(std::move(name), std::move(value));
  }
  return out;
}

}  // namespace gpuscale::api
