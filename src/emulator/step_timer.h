// StepTimer: how long one step of the emulated engine takes, for BatchEngine. Two models:
// the simulator's calibrated replica model (sim::ReplicaModel, `gpuscale emulate`'s default,
// calibrated_timing.h), so that an emulated replica and a simulated one take the same time
// for the same batch, and the linear knobs of EngineConfig (StepMilliseconds,
// batch_engine.h; fast and tunable, `--timing linear`, used when no timer is set).
//
// Thread-safety: implementations are immutable once built; const methods may be called
// concurrently. Pure: no clock, no I/O.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"

namespace gpuscale::emulator {

enum class StepTiming { kLinear, kCalibrated };

// "linear" or "calibrated". Errors: InvalidArgument naming "--timing" for any other value.
Result<StepTiming> ParseStepTiming(const std::string& name);

// What one step does, as the scheduler planned it at the step's start.
struct StepShape {
  int32_t batch_size = 0;      // sequences in the step: decoding plus prefilling
  int32_t decoding = 0;        // of those, sequences whose prompt is in KV: one token each
  int64_t context_tokens = 0;  // tokens the decoding sequences hold in KV (prompt + output)
  int64_t prefill_tokens = 0;  // prompt tokens prefilled in the step
  // Their causal attention, each prompt's own, in tokens^2 (sim::PrefillWork): a chunk of c
  // tokens of a prompt with p tokens already in KV adds (p + c)^2 - p^2.
  double prefill_attention_tokens2 = 0;
};

class StepTimer {
 public:
  virtual ~StepTimer() = default;
  // Seconds the step takes; > 0 for a step with work.
  virtual double StepSeconds(const StepShape& step) const = 0;
  // One line for the startup log, e.g. "calibrated llama-3-8b on h100, tp 1".
  virtual std::string Describe() const = 0;
};

}  // namespace gpuscale::emulator
