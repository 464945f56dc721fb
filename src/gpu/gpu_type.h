// GPU type keys: the short name under which a GPU's type is priced, requested
// (`gpu_type:` in a service spec, `gpuscale allocate --gpu-type`) and shown.
//
// A key is derived from the product name a driver reports, by one rule (docs/operations.md,
// "GPU types and prices"):
//   1. split the name on spaces and '-';
//   2. drop brand words (NVIDIA, Tesla, GeForce, Quadro) and form-factor or memory-technology
//      words (PCIe, SXM..., HBM...), case-insensitively;
//   3. the first memory size word ("80GB") moves to the end; later ones are dropped;
//   4. what remains is joined by '-'.
// So "NVIDIA H100 80GB HBM3" and "NVIDIA H100-SXM5-80GB" are both "H100-80GB",
// "NVIDIA A100-SXM4-40GB" is "A100-40GB", "NVIDIA L40S" is "L40S" and "NVIDIA H100 NVL"
// stays "H100-NVL" (a product of its own). Keys compare exactly (case-sensitive).
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "gpu/gpu_info.h"

namespace gpuscale::gpu {

// The type key of a product name; empty for an empty or all-dropped name (type unknown).
std::string GpuTypeKey(std::string_view product_name);

// Price of one GPU-hour by type key (the daemon config's `gpu.prices`, an inventory's
// `prices`). A type that is not listed has an unknown price.
using PriceTable = std::map<std::string, double, std::less<>>;

// Fills what a backend left unset: each GPU's type from its name (GpuTypeKey) and its price
// from `prices` by type. A type or price already set (an inventory entry) is kept.
void LabelTypesAndPrices(GpuSnapshot& snapshot, const PriceTable& prices);

}  // namespace gpuscale::gpu
