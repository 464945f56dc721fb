// The router flags of `gpuscale gateway`: --router, --prefix-affinity and
// --affinity-load-factor map onto a route::PickerSpec and through route::CheckPickerSpec,
// the check the YAML `router:` block goes through (config/router_config.h), so a value the
// config file rejects is rejected here in the same words, naming the flag.
//
// Thread-safety: call while building the CLI; `flags` must outlive parsing.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/result.h"
#include "route/picker_spec.h"

namespace gpuscale::cli {

struct RouterFlags {
  std::string router{route::PickerKindName(route::PickerKind::kLeastOutstanding)};
  bool prefix_affinity = false;
  double affinity_load_factor = route::PickerSpec{}.affinity_load_factor;
};

void AddRouterFlags(CLI::App* command, RouterFlags& flags);

// `base` with the flags' kind and affinity settings. Errors: those of
// route::ParsePickerKind and route::CheckPickerSpec, with Error::field the flag at fault.
Result<route::PickerSpec> PickerSpecFromFlags(const RouterFlags& flags, route::PickerSpec base);

}  // namespace gpuscale::cli
