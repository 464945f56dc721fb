// Request parsing for the REST API: JSON bodies and query parameters -> domain values, with
// errors a client can act on (kInvalidArgument naming the field, or the line and column of a
// JSON syntax error). No HTTP types: the functions take the body text and the query
// parameters, so they are unit-tested and fuzzed (fuzz/api_body_fuzz.cc) without a server.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"
#include "daemon_api/daemon_api.h"
#include "serve_config/daemon_config.h"
#include "task/task_types.h"

namespace gpuscale::api {

// Query parameters, name -> value, percent-decoded.
using QueryParams = std::multimap<std::string, std::string>;

// A request target ("/v1/events?kind=decision&since_id=4") split into its path and query.
struct RequestTarget {
  std::string path;    // percent-decoded ("%20" -> " "; "+" stays "+")
  QueryParams params;  // percent-decoded, "+" -> " " (form encoding); "a" alone -> a=""
};

// Errors: kInvalidArgument (field "target") when the target does not start with "/", holds
// a control byte, has a bad escape ("%zz", a "%" at the end) or decodes to a NUL byte.
Result<RequestTarget> ParseTarget(std::string_view target);

// Largest request body accepted; larger bodies get 413 before they are parsed.
inline constexpr size_t kMaxBodyBytes = 1 << 20;  // 1 MiB

// Errors: kInvalidArgument (field "body") when `body` is not one JSON object; a syntax
// error's message names its line and column.
Status CheckJsonObject(std::string_view body);

// A service object in the daemon config schema (a `services[i]` entry). `path_name` is the
// {name} of PUT /v1/services/{name} ("" for POST): the body's name must equal it, or be
// absent and is then taken from the path. Errors: kInvalidArgument naming the field, e.g.
// "gpus_per_replica", or "name" when it differs from the path.
Result<daemon::ServiceConfig> ParseServiceBody(std::string_view body, const std::string& path_name);

// A scaling rule of `service` (the fields of Backend.AI's model-service autoscaling rules plus
// optional `enabled`, default true), validated with config::ParseScalingRule so errors name the
// field. `name` is required; min_replicas/max_replicas default to the service's bounds;
// `source` also accepts "prometheus" (a PromQL-backed service value). Errors: kInvalidArgument
// naming the field.
Result<daemon::RuleView> ParseRuleBody(std::string_view body, const daemon::ServiceConfig& service);

// {"replicas": N} (N >= 0) or {"replicas": null} (back to the policy). Errors:
// kInvalidArgument with field "replicas".
Result<std::optional<int>> ParseReplicasBody(std::string_view body);

// ?seconds=N of /v1/gpus/history: default 300, 1..86400. Errors: field "seconds".
// The body of POST /v1/replicas/{id}/preempt: empty, or {"notice_seconds": N} with N in
// [0, 86400]; nullopt = the variant's default. Errors name notice_seconds or the unknown key.
Result<std::optional<Seconds>> ParsePreemptBody(std::string_view body);

Result<Seconds> ParseHistoryWindow(const QueryParams& params);

// GET /v1/services/NAME/history's range: `from` and `to` in seconds since the epoch
// (decimals allowed; absent: the daemon's defaults), `step` in seconds (absent or 0: the
// daemon picks). Errors: kInvalidArgument naming the parameter.
struct HistoryRange {
  std::optional<Seconds> from, to;
  Seconds step{0};
};
Result<HistoryRange> ParseHistoryRange(const QueryParams& params);

// ?since_id, ?service, ?kind, ?limit of /v1/events (limit default 100, 1..10000; since_id
// >= 0; kind an events::EventKind name, empty = all). Errors: kInvalidArgument naming the
// parameter (an unknown kind's message lists the known ones).
Result<daemon::EventQuery> ParseEventQuery(const QueryParams& params);

// The body of POST /v1/tasks: a task definition (docs/tasks.md) as YAML when `content_type`
// is application/yaml, text/yaml or application/x-yaml (parameters such as
// "; charset=utf-8" ignored), as JSON when it is application/json or, for any other or no
// Content-Type (curl -d), when the body starts with '{'; else as YAML. JSON syntax errors
// name their line and column (field "body"); definition errors name the field and line
// (config::ParseTaskDefinitionText with source "request body").
Result<task::TaskDefinition> ParseTaskBody(std::string_view body, std::string_view content_type);

// A resource id in a path: a decimal integer >= 1. `what` names the resource in the message
// ("task", "experiment"). Errors: kInvalidArgument naming `field`.
Result<int64_t> ParsePositiveId(std::string_view text, std::string_view field,
                                std::string_view what);

// A non-negative decimal integer (ids, counts). Errors: kInvalidArgument naming `field`.
Result<int64_t> ParseNonNegativeInt(std::string_view text, std::string_view field);

}  // namespace gpuscale::api
