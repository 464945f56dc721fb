#include "cli/api_flags.h"

#include <fmt/format.h>

namespace gpuscale::cli {

void AddApiFlags(CLI::App* command, ApiFlags& flags) {
  command->add_option("--api", flags.api,
                      fmt::format("URL of `gpuscale serve` (default $GPUSCALE_API, else {})",
                                  kDefaultApiUrl));
  command->add_option("--token", flags.token,
                      "Bearer token of the API (default $GPUSCALE_TOKEN, else none)");
  AddOutputOption(command, flags.format);
}

ApiClient MakeClient(const ApiFlags& flags) {
  return ApiClient(ResolveApiOptions(flags.api, flags.token));
}

}  // namespace gpuscale::cli
