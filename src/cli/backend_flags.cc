#include "cli/backend_flags.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

namespace gpuscale::cli {
namespace {

// "H100-80GB=2.49" -> prices["H100-80GB"] = 2.49; CLI11 reports the returned text (exit 2).
std::string AddPrice(const std::string& text, gpu::PriceTable& prices) {
  const size_t eq = text.rfind('=');
  const std::string type = eq == std::string::npos ? "" : text.substr(0, eq);
  double price = -1;
  if (eq != std::string::npos) {
    const char* first = text.data() + eq + 1;
    const char* last = text.data() + text.size();
    auto [end, ec] = std::from_chars(first, last, price);
    if (ec != std::errc() || end != last) price = -1;
  }
  if (type.empty() || !std::isfinite(price) || price < 0) {
    return fmt::format(
        "expected TYPE=PRICE with a price per GPU-hour >= 0, e.g. "
        "H100-80GB=2.49, got '{}'",
        text);
  }
  prices[type] = price;
  return "";
}

}  // namespace

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
  command
      ->add_option("--price",
                   "Price per GPU-hour of a GPU type, TYPE=PRICE (repeatable; "
                   "e.g. H100-80GB=2.49), for GPUs whose inventory entry names none")
      ->type_name("TYPE=PRICE")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::Validator(
          [&options](std::string& text) { return AddPrice(text, options.prices); }, ""));
}

}  // namespace gpuscale::cli
