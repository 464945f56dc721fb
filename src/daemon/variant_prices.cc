#include "daemon/variant_prices.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <set>

#include "alloc/gpu_selector.h"

namespace gpuscale::daemon {
namespace {

// The lowest price of the type's GPUs whose spot flag is `spot`, else of any of the type's.
std::optional<double> TypePrice(const gpu::GpuSnapshot& gpus, const std::string& type, bool spot) {
  std::optional<double> matching, any;
  for (const gpu::GpuInfo& g : gpus.gpus) {
    if (g.type != type || !g.price_per_hour) continue;
    any = std::min(any.value_or(*g.price_per_hour), *g.price_per_hour);
    if (g.spot == spot)
      matching = std::min(matching.value_or(*g.price_per_hour), *g.price_per_hour);
  }
  return matching ? matching : any;
}

}  // namespace

Result<std::vector<orch::VariantPlacement>> PriceVariants(const ServiceConfig& service,
                                                          const gpu::GpuSnapshot& gpus,
                                                          const std::string& path) {
  std::set<std::string> types;
  for (const gpu::GpuInfo& g : gpus.gpus) types.insert(g.type.empty() ? "unknown" : g.type);
  std::vector<orch::VariantPlacement> out;
  for (size_t i = 0; i < service.variants.size(); ++i) {
    const VariantConfig& v = service.variants[i];
    const std::string field = fmt::format("{}variants[{}].gpu_type", path, i);
    if (types.count(v.gpu_type) == 0) {
      return InvalidArgument(fmt::format("no GPU of type '{}' in the inventory (it has: {})",
                                         v.gpu_type, fmt::join(types, ", ")),
                             field);
    }
    const std::optional<double> price = TypePrice(gpus, v.gpu_type, v.spot);
    if (!price) {
      return InvalidArgument(
          fmt::format("no price for GPU type '{}': set gpu.prices or the inventory's prices "
                      "(sizing a mixed fleet orders its variants by price per capacity)",
                      v.gpu_type),
          field);
    }
    out.push_back(
        {v.name, v.gpu_type, v.gpus_per_replica, v.capacity, *price * v.gpus_per_replica, v.spot});
  }
  return out;
}

std::map<std::string, int> UnleasedGpusByType(const gpu::GpuSnapshot& gpus,
                                              const alloc::LeaseLedger& ledger) {
  std::set<std::string> leased;
  for (const alloc::Lease& l : ledger.Leases()) leased.insert(l.key);
  alloc::TakenGpus taken;
  static const std::string kLeased = "leased";
  taken.owner_of = [&](const std::string& key) -> const std::string* {
    return leased.count(key) != 0 ? &kLeased : nullptr;
  };
  return alloc::FreeGpusByType(gpus, taken);
}

}  // namespace gpuscale::daemon
