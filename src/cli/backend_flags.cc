#include "cli/backend_flags.h"

#include <string>
#include <vector>

namespace gpuscale::cli {

void AddBackendFlags(CLI::App* command, gpu::BackendOptions& options) {
  CLI::Option* backend =
      command
          ->add_option("--backend", options.kind,
                       "GPU source: auto (NVML, then nvidia-smi), nvml, nvidia-smi or "
                       "simulated (an inventory file or 4 x H100 80GB)")
          ->check(
              CLI::IsMember(std::vector<std::string>{"auto", "nvml", "nvidia-smi", "simulated"}))
          ->capture_default_str();
  command
      ->add_option("--inventory", options.inventory_path,
                   "Simulated inventory file (YAML or JSON, see examples/inventory.yaml); "
                   "implies --backend simulated")
      ->check(CLI::ExistingFile)
      ->each([&options, backend](const std::string&) {
        // An inventory only makes sense for the simulated backend; saying it is enough.
        if (backend->count() == 0) options.kind = "simulated";
      });
}

}  // namespace gpuscale::cli
