// The flags every client of a running daemon's API shares (`gpuscale task ...`,
// `gpuscale services`): where the daemon is, its token, and the output format.
//
// Thread-safety: plain values and stateless functions.
#pragma once

#include <string>

#include "cli/api_client.h"
#include "cli/command.h"

namespace gpuscale::cli {

struct ApiFlags {
  std::string api;    // "" = $GPUSCALE_API or the default
  std::string token;  // "" = $GPUSCALE_TOKEN or none
  OutputFormat format = OutputFormat::kTable;
};

// --api, --token and -o on `command`.
void AddApiFlags(CLI::App* command, ApiFlags& flags);

ApiClient MakeClient(const ApiFlags& flags);

}  // namespace gpuscale::cli
