// Emulator options for in-process tests: a named model, no startup delay and engine steps
// fast enough that a 16-token request takes about 20 ms. Tests set what they pin on top.
#pragma once

#include "emulator/emulator_server.h"

namespace gpuscale::testing {

inline emulator::EmulatorOptions FastEmulatorOptions() {
  emulator::EmulatorOptions options;
  options.model_name = "test-model";
  options.startup_seconds = 0;
  options.engine.decode_ms_base = 1;
  options.engine.decode_ms_per_seq = 0.05;
  options.engine.prefill_ms_per_1k_tokens = 5;
  return options;
}

}  // namespace gpuscale::testing
