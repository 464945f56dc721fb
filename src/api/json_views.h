// JSON views of the daemon's domain values as the REST API shows them (shapes documented in
// docs/api.md): GPUs (the same shape as `gpuscale gpus -o json`), services, rules, replicas,
// leases, events and the error body. Times are RFC 3339 UTC strings; absent values are null.
//
// This is an adapter-side header: it exposes nlohmann::json, so only api/ and cli/ .cc files
// include it (JSON stays out of domain headers; `gpuscale gpus -o json` prints SnapshotJson);
// api_server.h never does.
//
// Thread-safety: pure functions over plain values.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "daemon_api/daemon_api.h"
#include "gpu/availability_score.h"
#include "gpu/gpu_info.h"
#include "gpu/gpu_stats.h"

namespace gpuscale::api {

// Ordered so that keys print in the documented order.
using Json = nlohmann::ordered_json;

Json GpuJson(const gpu::GpuInfo& gpu, const gpu::ScoreWeights& weights);
// {"backend", "timestamp", "gpus": [...]}
Json SnapshotJson(const gpu::GpuSnapshot& snapshot, const gpu::ScoreWeights& weights);
// {"points": [{"timestamp", "gpus": [...]}]}
Json HistoryJson(const std::vector<gpu::HistoryPoint>& points, const gpu::ScoreWeights& weights);

// GET /v1/services/NAME/history: columnar, one entry per step, null for an empty step:
// {"service", "from", "to", "step", "t": [...], "desired", "ready", "current",
//  "metrics": [{"name", "value": [...], "target": [...]}], "gateway": {"<field>": [...]}}
Json ServiceHistoryJson(const std::string& service, const daemon::HistorySeries& series);

Json ServiceJson(const daemon::ServiceView& service);
// ServiceJson without its last key, "spec" (services_list_json.h adds it as text).
Json ServiceStatusJson(const daemon::ServiceView& service);
// A service's `gateway` figures (null when there are none).
Json GatewayJson(const std::optional<daemon::GatewayFigures>& gateway);
Json RuleJson(const daemon::RuleView& rule);
Json ReplicaJson(const daemon::ReplicaView& replica);
Json LeaseJson(const alloc::Lease& lease);
// `data` is embedded as JSON when it parses as JSON, else as a string.
Json EventJson(const daemon::EventView& event);

// {"error": {"code", "message", "field"}}; field is null when the error names none.
Json ErrorJson(const Error& error);

// A YAML document (e.g. a service's spec_yaml) as JSON: maps -> objects, sequences ->
// arrays, quoted scalars -> strings, plain scalars -> null/bool/integer/number/string as
// they read. Scalars under the top-level keys `command` and `env` stay strings (argv words
// and environment values are text even when they look like numbers). Unparsable text
// gives a JSON string holding the text.
Json YamlTextToJson(std::string_view yaml_text);

}  // namespace gpuscale::api
