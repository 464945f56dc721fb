// Builders of API values for unit tests (shapes as documented in docs/api.md).
import type { GatewayStats, Gpu, GpuscaleEvent, Replica, Rule, Service } from '../../src/api/types';

export function gpu(index: number, overrides: Partial<Gpu> = {}): Gpu {
  return {
    index,
    uuid: `GPU-${index}`,
    name: 'NVIDIA H100 80GB HBM3',
    memory_total_mb: 81559,
    memory_used_mb: 40779.5,
    memory_free_mb: 40779.5,
    utilization_percent: 50,
    temperature_c: 60,
    power_draw_w: 350,
    score: 0.5,
    ...overrides,
  };
}

export function service(overrides: Partial<Service> = {}): Service {
  return {
    name: 'chat',
    policy_family: 'target',
    min_replicas: 1,
    max_replicas: 4,
    desired_replicas: 2,
    manual_replicas: null,
    replicas: 2,
    ready_replicas: 1,
    pending_replicas: 0,
    draining_replicas: 0,
    last_decision: null,
    metric_errors: [],
    failure: null,
    apply_failure: null,
    created_at: '2025-01-01T00:00:00Z',
    spec: { name: 'chat' },
    gateway: null,
    ...overrides,
  };
}

// The `gateway` block of a service (and of a gateway_stats message) after some requests.
export function gatewayStats(overrides: Partial<GatewayStats> = {}): GatewayStats {
  return {
    requests_total: 14,
    errors_total: 1,
    in_flight: 2,
    queued: 0,
    request_rate_per_second: 0.3125,
    error_ratio: 0.0625,
    ttft_p50_seconds: 0.03,
    ttft_p90_seconds: 0.038000000000000006,
    tpot_p50_seconds: 0.005,
    e2e_p90_seconds: 0.27,
    added_latency_p99_seconds: 0.000047,
    ttft_violation_ratio: 0,
    tpot_violation_ratio: null,
    ...overrides,
  };
}

export function event(id: number, overrides: Partial<GpuscaleEvent> = {}): GpuscaleEvent {
  return {
    id,
    at: `2025-01-01T00:00:${String(id % 60).padStart(2, '0')}Z`,
    service: 'chat',
    kind: 'decision',
    replica: '',
    message: `event ${id}`,
    data: null,
    ...overrides,
  };
}

export function rule(overrides: Partial<Rule> = {}): Rule {
  return {
    id: 1,
    service: 'chat',
    name: 'queue-high',
    source: 'inference_framework',
    metric: 'vllm:num_requests_waiting',
    aggregation: 'average',
    comparator: 'GREATER_THAN',
    threshold: 10,
    step_size: 1,
    cooldown_seconds: 60,
    min_replicas: 1,
    max_replicas: 4,
    enabled: true,
    created_at: '2025-01-01T00:00:00Z',
    ...overrides,
  };
}

export function replica(id: string, pid: number, overrides: Partial<Replica> = {}): Replica {
  return {
    id,
    phase: 'ready',
    state: 'ready',
    phase_since: '2025-01-01T00:00:00Z',
    host: '127.0.0.1',
    port: 40053,
    gpus: [0],
    pid,
    restarts: 0,
    uptime_seconds: 8,
    outstanding_requests: 0,
    adopted: false,
    last_error: '',
    log_path: `/tmp/state/logs/${id}.log`,
    ...overrides,
  };
}
