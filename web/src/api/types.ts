// JSON shapes of gpuscale's REST API (docs/api.md). Absent readings are null; times are
// RFC 3339 UTC strings; units are in the field names (_mb = MiB as NVML reports it,
// _percent, _c, _w, _seconds).

export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

export interface Gpu {
  index: number;
  uuid: string;
  name: string;
  memory_total_mb: number | null;
  memory_used_mb: number | null;
  memory_free_mb: number | null;
  utilization_percent: number | null;
  temperature_c: number | null;
  power_draw_w: number | null;
  score: number;
}

export interface GpuSnapshot {
  backend: string;
  timestamp: string;
  gpus: Gpu[];
}

export interface GpuHistoryPoint {
  timestamp: string;
  gpus: Gpu[];
}

export interface GpuHistory {
  points: GpuHistoryPoint[];
}

export interface LastDecision {
  at: string;
  reason: string;
  details: string[];
}

export interface Service {
  name: string;
  policy_family: string;
  min_replicas: number;
  max_replicas: number;
  desired_replicas: number;
  manual_replicas: number | null;
  replicas: number; // pending + starting + ready (not draining)
  ready_replicas: number;
  pending_replicas: number;
  draining_replicas: number;
  last_decision: LastDecision | null;
  metric_errors: string[];
  created_at: string;
  spec: JsonValue;
}

export const RULE_SOURCES = ['inference_framework', 'kernel', 'prometheus'] as const;
export const RULE_COMPARATORS = [
  'GREATER_THAN',
  'GREATER_THAN_OR_EQUAL',
  'LESS_THAN',
  'LESS_THAN_OR_EQUAL',
] as const;

export interface Rule {
  id: number;
  service: string;
  name: string;
  source: string;
  metric: string;
  aggregation: string;
  comparator: string;
  threshold: number;
  step_size: number;
  cooldown_seconds: number;
  min_replicas: number;
  max_replicas: number;
  enabled: boolean;
  created_at: string;
}

// POST /v1/services/{name}/rules body. Numeric fields may carry the user's raw text when it
// is not a number, so that the API (the single source of truth) names what is wrong.
export type RuleInput = Record<string, string | number | boolean>;

export interface Replica {
  id: string;
  phase: string;
  state: string;
  phase_since: string;
  host: string;
  port: number;
  gpus: number[];
  pid: number;
  restarts: number;
  uptime_seconds: number;
  outstanding_requests: number;
  adopted: boolean;
  last_error: string;
  log_path: string;
}

export interface Lease {
  key: string;
  gpu_index: number;
  node: string;
  owner: string;
  acquired_at: string;
}

export interface GpuscaleEvent {
  id: number;
  at: string;
  service: string;
  kind: string;
  replica: string;
  message: string;
  data: JsonValue;
}

export interface EventQuery {
  since_id?: number;
  service?: string;
  kind?: string;
  limit?: number;
}

export interface ApiErrorBody {
  error: { code: string; message: string; field: string | null };
}
