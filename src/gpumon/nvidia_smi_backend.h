// NvidiaSmiBackend: reads GPUs by running `nvidia-smi --query-gpu=... --format=csv,noheader,
// nounits` (and `--query-compute-apps=...` for processes) as an argv, never through a shell,
// with a timeout. Works wherever the driver's tool is installed, without NVML headers.
//
// Thread-safety: one caller at a time (GpuBackend contract); holds no mutable state.
#pragma once

#include <string>
#include <string_view>

#include "core/clock.h"
#include "gpu/gpu_info.h"

namespace gpuscale::gpu {

class NvidiaSmiBackend final : public GpuBackend {
 public:
  // `program`: name searched on PATH, or a path. `timeout` bounds each run (default 10 s;
  // nvidia-smi can take seconds when the driver is loading or persistence mode is off).
  explicit NvidiaSmiBackend(std::string program = "nvidia-smi", Seconds timeout = Seconds{10});

  std::string_view Name() const override { return "nvidia-smi"; }

  // Errors: kUnavailable when the tool cannot run, times out or exits non-zero (message
  // carries its stderr); kInvalidArgument from ParseNvidiaSmiCsv for malformed output.
  // The compute-apps query is best effort: when it fails, processes are left empty.
  Result<GpuSnapshot> Query(Seconds now) override;

 private:
  std::string program_;
  Seconds timeout_;
};

}  // namespace gpuscale::gpu
