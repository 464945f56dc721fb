#include "cli/router_flags.h"

#include <fmt/format.h>

#include <array>
#include <string_view>
#include <utility>

namespace gpuscale::cli {
namespace {

// PickerSpec field (route/picker_spec.h) -> the flag that sets it.
constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kFlagOf = {{
    {route::kKindField, "--router"},
    {route::kPrefixAffinityField, "--prefix-affinity"},
    {route::kAffinityLoadFactorField, "--affinity-load-factor"},
}};

Error NamingFlag(Error error) {
  for (const auto& [field, flag] : kFlagOf) {
    if (error.field == field) error.field = flag;
  }
  return error;
}

}  // namespace

void AddRouterFlags(CLI::App* command, RouterFlags& flags) {
  command
      ->add_option("--router", flags.router,
                   fmt::format("How a replica is picked: {}", route::PickerKindNames()))
      ->capture_default_str();
  command->add_flag("--prefix-affinity", flags.prefix_affinity,
                    fmt::format("Send requests whose prompts start alike to the same replica "
                                "(prefix cache hits) while it is not overloaded ({} only)",
                                route::PickerKindName(route::PickerKind::kLeastOutstanding)));
  command
      ->add_option("--affinity-load-factor", flags.affinity_load_factor,
                   "With --prefix-affinity: a replica keeps its prompts while it holds at most "
                   "this factor times the mean load, in (1, 100]")
      ->capture_default_str();
}

Result<route::PickerSpec> PickerSpecFromFlags(const RouterFlags& flags, route::PickerSpec base) {
  Result<route::PickerKind> kind = route::ParsePickerKind(flags.router);
  if (!kind) return Unexpected<Error>(NamingFlag(kind.error()));
  base.kind = *kind;
  base.prefix_affinity = flags.prefix_affinity;
  base.affinity_load_factor = flags.affinity_load_factor;
  if (Status checked = route::CheckPickerSpec(base); !checked) {
    return Unexpected<Error>(NamingFlag(checked.error()));
  }
  return base;
}

}  // namespace gpuscale::cli
