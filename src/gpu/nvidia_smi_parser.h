// Parsers for nvidia-smi's machine-readable output (`--format=csv,noheader,nounits`).
//
// GPU query columns, in this order (kNvidiaSmiGpuQuery):
//   index, uuid, name, memory.total, memory.used, memory.free, utilization.gpu,
//   temperature.gpu, power.draw
// Readings nvidia-smi cannot give ("[N/A]", "[Not Supported]", "[Unknown Error]", "N/A", an
// empty field) become nullopt, never 0. Lines may carry trailing spaces or "\r". A line may
// stop early (older drivers, tools wrapping nvidia-smi): the missing trailing readings are
// absent, but index, uuid and name are required. More columns than requested, or a reading
// that is not a number, is an error naming the line and column: nvidia-smi's output is
// machine-made, so garbage means we are not talking to the tool we think we are.
//
// Pure functions of the text: safe from any thread, fuzzed by fuzz/nvidia_smi_fuzz.cc.
#pragma once

#include <string_view>
#include <vector>

#include "core/result.h"
#include "gpu/gpu_info.h"

namespace gpuscale::gpu {

inline constexpr std::string_view kNvidiaSmiGpuQuery =
    "index,uuid,name,memory.total,memory.used,memory.free,utilization.gpu,temperature.gpu,"
    "power.draw";
inline constexpr std::string_view kNvidiaSmiAppsQuery = "gpu_uuid,pid,used_memory,process_name";

// Parses the GPU query. Empty output (no lines) is zero GPUs. GPUs are returned ordered by
// index. Errors: kInvalidArgument with field "line N" (1-based) and the column name, for a
// wrong column count, a non-numeric reading, a missing/duplicate index or an empty uuid.
Result<std::vector<GpuInfo>> ParseNvidiaSmiCsv(std::string_view text);

// A compute process line: `--query-compute-apps=gpu_uuid,pid,used_memory,process_name`.
struct NvidiaSmiApp {
  std::string gpu_uuid;
  GpuProcess process;
};

// Parses the compute-apps query; same conventions and errors as ParseNvidiaSmiCsv.
Result<std::vector<NvidiaSmiApp>> ParseNvidiaSmiAppsCsv(std::string_view text);

// Attaches each app to the GPU with its uuid (apps of unknown GPUs are dropped).
void AttachProcesses(const std::vector<NvidiaSmiApp>& apps, std::vector<GpuInfo>& gpus);

}  // namespace gpuscale::gpu
