// Simulated GPU inventory: the file format behind the `simulated` backend (documented in
// examples/inventory.yaml) and the built-in default of 4 idle H100 80GB GPUs.
//
// The parser is a pure function of the text, so tests and the fuzz target call it directly.
// Thread-safety: plain values and pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "core/result.h"
#include "gpu/gpu_info.h"
#include "gpu/gpu_type.h"

namespace YAML {
class Node;
}

namespace gpuscale::gpu {

struct Inventory {
  std::vector<GpuInfo> gpus;  // ordered by index
  GpuTopology topology;       // empty unless the file gives one
};

// Parses YAML or JSON inventory text. `source` names the input in messages (a path).
// Errors: kInvalidArgument naming the field path and line, e.g.
// "gpus[2].memory_used_mb: expected a number, got 'lots' (line 9)".
Result<Inventory> ParseInventory(std::string_view text, std::string_view source);

// A map of GPU type key to price per GPU-hour (an inventory's `prices`, the daemon config's
// `gpu.prices`); an absent or null node is an empty table. Errors: kInvalidArgument naming
// `path.<type>` and the line, e.g. "gpu.prices.H100-80GB: expected a number ... (line 4)".
Result<PriceTable> ParsePriceTable(const YAML::Node& node, std::string_view path);

// 4 x "NVIDIA H100 80GB HBM3" (type H100-80GB, price unknown), 81559 MiB each, idle, 32-35 C, ~70
// W, NVLink between all.
Inventory DefaultInventory();

// "nvlink" -> kNvLink etc. (names in examples/inventory.yaml); nullopt for unknown names.
std::optional<LinkLevel> ParseLinkLevel(std::string_view name);
std::string_view LinkLevelName(LinkLevel level);

}  // namespace gpuscale::gpu
