// Calibrated timing for the emulator (`gpuscale emulate --timing calibrated`): BatchEngine's
// steps timed by the simulator's replica model (sim/replica_model.h, calibrated from
// data/perf), so that an emulated replica and a simulated one of the same model, GPU and
// tensor parallelism take the same time for the same batch. The model also sets what the
// simulated replica has:
//   - step time = sim::ReplicaModel::MixedStepSeconds(prompt tokens prefilled in the step,
//     decoding sequences, their KV context tokens) (DecodeStepSeconds when nothing
//     prefills, PrefillSeconds when nothing decodes);
//   - KV cache = the model's (GPU memory x tp x 0.9 minus weights), scaled by
//     --gpu-memory-utilization / 0.9 as with linear timing;
//   - batch limit = the model's max_batch_size (256) unless --max-batch-size is given;
//   - chunked prefill always, with the model's token budget (8192) unless
//     --max-num-batched-tokens is given (the simulator always chunks).
// The linear knobs (--prefill-ms-per-1k-tokens, --decode-ms-base, --decode-ms-per-seq,
// --kv-cache-tokens) do not apply and are errors when given.
//
// Thread-safety: pure functions; the timer they build is immutable.
#pragma once

#include "core/result.h"
#include "emulator/batch_engine.h"
#include "emulator/engine_flags.h"

namespace gpuscale::emulator {

// Flags of the linear model that calibrated timing rejects.
inline constexpr const char* kLinearOnlyFlags[] = {"--prefill-ms-per-1k-tokens", "--decode-ms-base",
                                                   "--decode-ms-per-seq", "--kv-cache-tokens"};

// `base` timed by the calibrated model of flags.model_preset on flags.gpu at
// flags.tensor_parallel_size, with the capacities above. Errors: InvalidArgument naming the
// flag for a linear-only flag in flags.given, --pipeline-parallel-size other than 1, or
// what sim::MakeReplicaModel rejects (an unknown --model-preset or --gpu, a
// --tensor-parallel-size other than 1/2/4/8); NotFound (--gpu or --tensor-parallel-size)
// when no public profile covers the combination; ResourceExhausted
// (--tensor-parallel-size) when the weights do not fit.
Result<EngineConfig> ApplyCalibratedTiming(const EngineConfig& base, const EngineFlags& flags);

}  // namespace gpuscale::emulator
