// Runs as `gpuscale simulate -o json` writes them (docs/simulation.md "Outputs"), trimmed to
// a few buckets: plain JSON objects, so tests can break any field.

type Json = Record<string, unknown>;

export function simRunJson(name: string, overrides: Json = {}): Json {
  return {
    name,
    policy: name === 'hpa' ? 'target' : name,
    trace: { format: 'azure_csv', requests: 1500, span_seconds: 309.5, rate_per_second: 4.846, mean_input_tokens: 1067.3,
      mean_output_tokens: 257.2, skipped_rows: 0 },
    requests: 1500,
    completed: 1500,
    aborted: 0,
    slo_met: 1485,
    slo_attainment: 0.99,
    fresh_replica_misses: 0,
    slo_target: 0.99,
    ttft_seconds: { p50: 0.031, p90: 0.083, p99: 0.1305 },
    tpot_seconds: { p50: 0.0096, p90: 0.0111, p99: 0.0136 },
    e2e_seconds: { p50: 2.01, p90: 4.5, p99: 6.06 },
    gpu_hours: 0.5,
    oracle_gpu_hours: 0.25,
    gpu_hours_over_oracle: 2,
    oracle_plan: { bucket_seconds: 60, replicas: [1, 3, 2], mean_replicas: 2, run_mean_ready_replicas: 2.5,
      replica_hours_above: 0.01, replica_hours_below: 0 },
    reactive_plan: { lag_seconds: 120, hold_seconds: 60, spare_replicas: 1, gpu_hours: 0.4, gpu_hours_over_oracle: 1.6,
      attainment: 0.995, meets_target: true, replicas: [8, 8, 1] },
    static_fleet: { replicas: 2, gpu_hours: 0.6, attainment: 0.993, meets_target: true },
    timeline: { bucket_seconds: 15, time_s: [0, 15, 30], arrival_rate: [0, 4.5, 5], replicas: [1, 2, 2],
      ready_replicas: [1, 1, 2] },
    scale_ups: 1,
    scale_downs: 0,
    replicas_started: 1,
    replicas_stopped: 0,
    peak_replicas: 2,
    duration_seconds: 314.7,
    controller_errors: 0,
    ...overrides,
  };
}

// What --no-oracle leaves out: the oracle and the reactive reference built on it.
export function noOracle(run: Json): Json {
  const { oracle_gpu_hours: _a, gpu_hours_over_oracle: _b, oracle_plan: _c, reactive_plan: _d, ...rest } = run;
  return rest;
}
