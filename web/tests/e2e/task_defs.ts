// Task definitions the e2e tests submit (docs/tasks.md, as JSON objects).

import { GPUSCALE_BIN } from './daemon';

// One experiment whose server stays in its emulated model load (so the task stays running
// until cancelled); `overrides` replace top-level fields.
export function slowTask(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'e2e-form-cancel',
    model: 'gpuscale/emulated-llama-3.1-8b',
    params_b: 1,
    parameters: { 'tensor-parallel-size': [1] },
    server: {
      command: [GPUSCALE_BIN, 'emulate', '--port', '{port}', '--model', '{model}', '--startup-seconds', '300',
        '--drain-seconds', '0.5'],
      startup_timeout_seconds: 600,
    },
    benchmark: { concurrency: 1, input_tokens: 16, output_tokens: 4, duration_seconds: 1 },
    gpu_wait_timeout_seconds: 60,
    ...overrides,
  };
}
