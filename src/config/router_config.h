// The `router:` block of a config file -> route::PickerSpec (route/picker_spec.h): the one
// reader that the daemon config (`gateway.router`) and the simulation config (`router`)
// share. It lives here rather than in route/ because route/ is pure and does not see
// yaml-cpp; the checks of the values themselves are route::CheckPickerSpec, which the
// `gpuscale gateway` flags go through too.
//
// Accepted forms (every key optional; the kinds are route::PickerKindNames()):
//
//   router: least_outstanding            # a kind alone (or round_robin, prefix_cache)
//   router: {kind: least_outstanding, slow_start_seconds: 30, prefix_affinity: false,
//            affinity_load_factor: 1.25}
//   router: {kind: prefix_cache, prefix_index: precise}   # or approximate (the default)
//
// An absent or empty block gives `defaults`. A key that is absent keeps its value in
// `defaults`, except that round_robin starts with no slow start and no prefix affinity
// (it has neither, and a caller's default for least outstanding must not make
// `{kind: round_robin}` an error).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string_view>

#include "core/result.h"
#include "route/picker_spec.h"

namespace gpuscale::config {

// Errors: invalid_argument with field "<path>" or "<path>.<key>" and the line: an unknown
// key, a value of the wrong type, a kind not in the table, a block neither a kind nor a
// mapping, and those of route::CheckPickerSpec, e.g.
//   `gateway.router.slow_start_seconds: applies to least_outstanding only (line 4)`.
Result<route::PickerSpec> ParseRouterConfig(const YAML::Node& node, std::string_view path,
                                            const route::PickerSpec& defaults);

}  // namespace gpuscale::config
