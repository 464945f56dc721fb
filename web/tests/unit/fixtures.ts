// Builders of API values for unit tests (shapes as documented in docs/api.md).
import type { Gpu, GpuscaleEvent, Rule, Service } from '../../src/api/types';

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
    created_at: '2025-01-01T00:00:00Z',
    spec: { name: 'chat' },
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
