#include "gpumon/inventory.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <set>
#include <utility>

#include "gpu/gpu_type.h"
#include "yaml/yaml_util.h"

namespace gpuscale::gpu {
namespace {

constexpr int64_t kH100MemoryMb = 81559;
constexpr std::string_view kH100Name = "NVIDIA H100 80GB HBM3";

constexpr std::array<std::pair<std::string_view, LinkLevel>, 8> kLinkNames{{
    {"same", LinkLevel::kSame},
    {"nvlink", LinkLevel::kNvLink},
    {"single_switch", LinkLevel::kSingleSwitch},
    {"multiple_switch", LinkLevel::kMultipleSwitch},
    {"host_bridge", LinkLevel::kHostBridge},
    {"numa_node", LinkLevel::kNumaNode},
    {"system", LinkLevel::kSystem},
    {"unknown", LinkLevel::kUnknown},
}};

// A number field where absent means `fallback` and an explicit `null` means "unknown"
// (so an inventory can model a sensor that reads [N/A]). Range-checked to [lo, hi].
Result<std::optional<double>> ReadReading(const YAML::Node& map, std::string_view key,
                                          std::string_view path, std::optional<double> fallback,
                                          double lo, double hi) {
  const YAML::Node node = map[std::string(key)];
  if (!node.IsDefined()) return fallback;
  if (node.IsNull()) return std::optional<double>{};
  GS_ASSIGN_OR_RETURN(double value, yaml::ReadDouble(map, key, path));
  if (value < lo || value > hi) {
    return yaml::FieldError(node, yaml::Join(path, key),
                            fmt::format("expected a value in [{}, {}], got {}", lo, hi, value));
  }
  return std::optional<double>{value};
}

std::optional<int64_t> ToMb(std::optional<double> value) {
  if (!value) return std::nullopt;
  return static_cast<int64_t>(std::llround(*value));
}

Result<GpuProcess> ParseProcess(const YAML::Node& node, const std::string& path) {
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(node, path, {"pid", "used_memory_mb", "name"}));
  GpuProcess process;
  GS_ASSIGN_OR_RETURN(process.pid, yaml::ReadInt(node, "pid", path));
  GS_ASSIGN_OR_RETURN(auto used, ReadReading(node, "used_memory_mb", path, {}, 0, 1e9));
  process.used_memory_mb = ToMb(used);
  GS_ASSIGN_OR_RETURN(process.name, yaml::ReadString(node, "name", path, ""));
  return process;
}

// Reads the memory and sensor fields of one GPU entry; defaults model an idle GPU.
Status ParseReadings(const YAML::Node& node, const std::string& path, GpuInfo& gpu) {
  GS_ASSIGN_OR_RETURN(auto total, ReadReading(node, "memory_total_mb", path,
                                              static_cast<double>(kH100MemoryMb), 1, 1e9));
  gpu.memory_total_mb = ToMb(total);
  GS_ASSIGN_OR_RETURN(auto used, ReadReading(node, "memory_used_mb", path, 0.0, 0, 1e9));
  gpu.memory_used_mb = ToMb(used);
  if (gpu.memory_total_mb && gpu.memory_used_mb) {
    if (*gpu.memory_used_mb > *gpu.memory_total_mb) {
      return yaml::FieldError(node["memory_used_mb"], yaml::Join(path, "memory_used_mb"),
                              fmt::format("memory_used_mb {} exceeds memory_total_mb {}",
                                          *gpu.memory_used_mb, *gpu.memory_total_mb));
    }
    gpu.memory_free_mb = *gpu.memory_total_mb - *gpu.memory_used_mb;
  }
  // Derived fields of `gpuscale gpus -o json`, so that a snapshot of a real machine loads as
  // an inventory: checked against what they derive from, never taken as given.
  GS_ASSIGN_OR_RETURN(auto free, ReadReading(node, "memory_free_mb", path, {}, 0, 1e9));
  if (free && gpu.memory_free_mb && ToMb(free) != gpu.memory_free_mb) {
    return yaml::FieldError(
        node["memory_free_mb"], yaml::Join(path, "memory_free_mb"),
        fmt::format("memory_free_mb {} is not memory_total_mb - memory_used_mb = {}",
                    *ToMb(free), *gpu.memory_free_mb));
  }
  GS_RETURN_IF_ERROR(ReadReading(node, "score", path, {}, 0, 1));  // recomputed from weights
  GS_ASSIGN_OR_RETURN(gpu.utilization_percent,
                      ReadReading(node, "utilization_percent", path, 0.0, 0, 100));
  GS_ASSIGN_OR_RETURN(gpu.temperature_c, ReadReading(node, "temperature_c", path, {}, -50, 200));
  GS_ASSIGN_OR_RETURN(gpu.power_draw_w, ReadReading(node, "power_draw_w", path, {}, 0, 1e5));
  return OkStatus();
}

// type (default: from the name), price_per_hour (default: unknown, or the file's `prices`
// for the type; applied by ParseInventory) and spot.
Status ParseTypeAndPrice(const YAML::Node& node, const std::string& path, GpuInfo& gpu) {
  // null: unknown, as `gpuscale gpus -o json` writes it; derived like an absent type.
  const YAML::Node type = node["type"];
  if (type.IsDefined() && type.IsNull()) {
    gpu.type = GpuTypeKey(gpu.name);
  } else {
    GS_ASSIGN_OR_RETURN(gpu.type, yaml::ReadString(node, "type", path, GpuTypeKey(gpu.name)));
  }
  if (gpu.type.empty()) {
    return yaml::FieldError(type.IsDefined() ? type : node, yaml::Join(path, "type"),
                            fmt::format("cannot tell the type from name '{}'; give one, e.g. "
                                        "type: H100-80GB",
                                        gpu.name));
  }
  GS_ASSIGN_OR_RETURN(gpu.price_per_hour, ReadReading(node, "price_per_hour", path, {}, 0, 1e6));
  GS_ASSIGN_OR_RETURN(gpu.spot, yaml::ReadBool(node, "spot", path, false));
  return OkStatus();
}

Result<GpuInfo> ParseGpu(const YAML::Node& node, const std::string& path, size_t position) {
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      node, path,
      {"index", "uuid", "name", "memory_total_mb", "memory_used_mb", "memory_free_mb",
       "utilization_percent", "temperature_c", "power_draw_w", "score", "node", "processes", "type",
       "price_per_hour", "spot"}));
  GpuInfo gpu;
  GS_ASSIGN_OR_RETURN(gpu.index, yaml::ReadInt(node, "index", path, static_cast<int>(position)));
  if (gpu.index < 0) return yaml::FieldError(node, yaml::Join(path, "index"), "must be >= 0");
  GS_ASSIGN_OR_RETURN(
      gpu.uuid, yaml::ReadString(node, "uuid", path, fmt::format("GPU-sim-{:04d}", gpu.index)));
  GS_ASSIGN_OR_RETURN(gpu.name, yaml::ReadString(node, "name", path, std::string(kH100Name)));
  GS_ASSIGN_OR_RETURN(gpu.node, yaml::ReadString(node, "node", path, ""));
  GS_RETURN_IF_ERROR(ParseTypeAndPrice(node, path, gpu));
  GS_RETURN_IF_ERROR(ParseReadings(node, path, gpu));
  const YAML::Node processes = node["processes"];
  if (processes.IsDefined() && !processes.IsNull()) {
    const std::string processes_path = yaml::Join(path, "processes");
    if (!processes.IsSequence())
      return yaml::FieldError(processes, processes_path, "expected a list");
    for (size_t i = 0; i < processes.size(); ++i) {
      GS_ASSIGN_OR_RETURN(GpuProcess p, ParseProcess(processes[i], yaml::Index(processes_path, i)));
      gpu.processes.push_back(std::move(p));
    }
  }
  return gpu;
}

Result<GpuTopology> ParseTopology(const YAML::Node& node, size_t gpu_count) {
  GpuTopology topology;
  if (!node.IsSequence() || node.size() != gpu_count) {
    return yaml::FieldError(
        node, "topology",
        fmt::format("expected a {0}x{0} matrix of link names (one row per GPU)", gpu_count));
  }
  for (size_t i = 0; i < gpu_count; ++i) {
    const YAML::Node row = node[i];
    const std::string row_path = yaml::Index("topology", i);
    if (!row.IsSequence() || row.size() != gpu_count) {
      return yaml::FieldError(row, row_path,
                              fmt::format("expected a list of {} link names", gpu_count));
    }
    auto& levels = topology.levels.emplace_back();
    for (size_t j = 0; j < gpu_count; ++j) {
      const std::string name = row[j].IsScalar() ? row[j].Scalar() : "";
      std::optional<LinkLevel> level = ParseLinkLevel(name);
      if (!level) {
        return yaml::FieldError(row[j], yaml::Index(row_path, j),
                                fmt::format("unknown link '{}'; expected one of same, nvlink, "
                                            "single_switch, multiple_switch, host_bridge, "
                                            "numa_node, system, unknown",
                                            name));
      }
      levels.push_back(*level);
    }
  }
  return topology;
}

// Reads the `gpus` list; indices must be unique. Returns GPUs ordered by index.
Result<std::vector<GpuInfo>> ParseGpus(const YAML::Node& gpus) {
  if (!gpus.IsDefined() || gpus.IsNull()) {
    return yaml::FieldError(gpus, "gpus", "required field is missing (a list of GPUs)");
  }
  if (!gpus.IsSequence()) return yaml::FieldError(gpus, "gpus", "expected a list of GPUs");
  std::vector<GpuInfo> result;
  std::set<int> seen;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const std::string path = yaml::Index("gpus", i);
    GS_ASSIGN_OR_RETURN(GpuInfo gpu, ParseGpu(gpus[i], path, i));
    if (!seen.insert(gpu.index).second) {
      return yaml::FieldError(gpus[i], yaml::Join(path, "index"),
                              fmt::format("duplicate GPU index {}", gpu.index));
    }
    result.push_back(std::move(gpu));
  }
  std::stable_sort(result.begin(), result.end(),
                   [](const GpuInfo& a, const GpuInfo& b) { return a.index < b.index; });
  return result;
}

}  // namespace

Result<PriceTable> ParsePriceTable(const YAML::Node& node, std::string_view path) {
  PriceTable prices;
  if (!node.IsDefined() || node.IsNull()) return prices;
  if (!node.IsMap()) {
    return yaml::FieldError(node, path,
                            "expected a map of GPU type to price per GPU-hour, e.g. "
                            "{H100-80GB: 2.49}");
  }
  for (const auto& entry : node) {
    GS_ASSIGN_OR_RETURN(std::string type, yaml::KeyName(entry.first, path));
    GS_ASSIGN_OR_RETURN(auto price, ReadReading(node, type, path, {}, 0, 1e6));
    if (!price) return yaml::FieldError(entry.second, yaml::Join(path, type), "expected a price");
    prices.emplace(std::move(type), *price);
  }
  return prices;
}

std::optional<LinkLevel> ParseLinkLevel(std::string_view name) {
  for (const auto& [text, level] : kLinkNames) {
    if (text == name) return level;
  }
  return std::nullopt;
}

std::string_view LinkLevelName(LinkLevel level) {
  for (const auto& [text, value] : kLinkNames) {
    if (value == level) return text;
  }
  return "unknown";
}

Result<Inventory> ParseInventory(std::string_view text, std::string_view source) {
  try {
    GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::ParseYaml(text, source));
    if (!root.IsMap()) {
      return InvalidArgument(fmt::format("{}: expected a mapping with a 'gpus' list", source));
    }
    // backend and timestamp: what `gpuscale gpus -o json` adds around the GPUs (informative).
    GS_RETURN_IF_ERROR(
        yaml::CheckKnownKeys(root, "", {"gpus", "topology", "prices", "backend", "timestamp"}));
    Inventory inventory;
    GS_ASSIGN_OR_RETURN(inventory.gpus, ParseGpus(root["gpus"]));
    GS_ASSIGN_OR_RETURN(PriceTable prices, ParsePriceTable(root["prices"], "prices"));
    GpuSnapshot priced;
    priced.gpus = std::move(inventory.gpus);
    LabelTypesAndPrices(priced, prices);
    inventory.gpus = std::move(priced.gpus);
    const YAML::Node topology = root["topology"];
    if (topology.IsDefined() && !topology.IsNull()) {
      GS_ASSIGN_OR_RETURN(inventory.topology, ParseTopology(topology, inventory.gpus.size()));
    }
    return inventory;
  } catch (const YAML::Exception& e) {
    // yaml-cpp throws on odd shapes (e.g. keys that are not scalars); keep it at the edge.
    return InvalidArgument(fmt::format("{}: {} (line {})", source, e.msg, e.mark.line + 1));
  }
}

Inventory DefaultInventory() {
  Inventory inventory;
  constexpr int kCount = 4;
  for (int i = 0; i < kCount; ++i) {
    GpuInfo gpu;
    gpu.index = i;
    gpu.uuid = fmt::format("GPU-sim-{:04d}", i);
    gpu.name = std::string(kH100Name);
    gpu.type = GpuTypeKey(kH100Name);
    gpu.memory_total_mb = kH100MemoryMb;
    gpu.memory_used_mb = 0;
    gpu.memory_free_mb = kH100MemoryMb;
    gpu.utilization_percent = 0.0;
    gpu.temperature_c = 32.0 + i;  // idle H100 SXM: low 30s C, ~70 W
    gpu.power_draw_w = 69.5 + i * 0.5;
    inventory.gpus.push_back(std::move(gpu));
  }
  inventory.topology.levels.assign(kCount, std::vector<LinkLevel>(kCount, LinkLevel::kNvLink));
  for (int i = 0; i < kCount; ++i) inventory.topology.levels[i][i] = LinkLevel::kSame;
  return inventory;
}

}  // namespace gpuscale::gpu
