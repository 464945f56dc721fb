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
  // Type key ("H100-80GB": what a service's gpu_type matches); null when unknown. The
  // type, price and spot fields are absent from daemons that predate them.
  type?: string | null;
  price_per_hour?: number | null; // one GPU-hour in the operator's currency; null = unknown
  spot?: boolean; // preemptible capacity
  memory_total_mb: number | null;
  memory_used_mb: number | null;
  memory_free_mb: number | null;
  utilization_percent: number | null;
  temperature_c: number | null;
  power_draw_w: number | null;
  score: number;
  // GET /v1/gpus only (the history keeps none); absent from daemons that predate it.
  processes?: GpuProcess[];
}

// A compute process on a GPU (NVML / nvidia-smi; on simulated GPUs the emulated replica,
// "SERVICE replica ID", or a task's benchmark server, "experiment #ID", holding it).
export interface GpuProcess {
  pid: number;
  name: string; // "" when the backend does not know it
  used_memory_mb: number | null; // null when the driver does not say (some MIG / container setups)
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

// Why the daemon could not apply a service's spec (or rules, or manual override) yet; it
// retries with backoff without another request.
export interface ApplyFailure {
  message: string;
  attempts: number;
  next_retry_at: string;
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
  failure: string | null; // why its replicas cannot start (none ready); null otherwise
  apply_failure: ApplyFailure | null; // null once what the API asked for is applied
  created_at: string;
  spec: JsonValue;
  gateway: GatewayStats | null; // null: no gateway, or no request for this service reached it yet
}

// What the gateway measured for one service (docs/gateway.md), refreshed every control-loop
// tick. Rate: last 30 s; ratios and quantiles: last minute; null when that window holds no
// request (TPOT also needs streamed responses). Quantiles come from histogram buckets.
export interface GatewayStats {
  requests_total: number;
  errors_total: number;
  in_flight: number;
  queued: number;
  request_rate_per_second: number | null;
  error_ratio: number | null; // 0..1
  ttft_p50_seconds: number | null;
  ttft_p90_seconds: number | null;
  tpot_p50_seconds: number | null;
  e2e_p90_seconds: number | null;
  // What the gateway itself added before the first byte (routing, relaying; not the
  // replica's time), p99.
  added_latency_p99_seconds: number | null;
  ttft_violation_ratio: number | null; // share of requests over the service's SLO, 0..1
  tpot_violation_ratio: number | null;
}

// `event: gateway_stats` on /v1/events/stream (no id: it is not a stored event), every 5 s:
// the services that have figures.
export interface GatewayStatsMessage {
  services: Record<string, GatewayStats>;
}

// GET /v1/services/{name}/history: the daemon's in-memory record of a service, one entry per
// `step` seconds from `from` to `to` (Unix seconds), columnar so that each array is a chart
// line; null where nothing was recorded. Tick resolution for the last 10 minutes, one point
// per minute for 24 hours.
export type HistoryColumn = (number | null)[];

export interface HistoryMetric {
  name: string; // the metric (or PromQL) a policy decision read
  value: HistoryColumn;
  target: HistoryColumn; // the target or threshold it compared the value with
}

export interface GatewayHistoryColumns {
  requests_per_second: HistoryColumn;
  error_ratio: HistoryColumn; // 0..1
  ttft_p50_seconds: HistoryColumn;
  ttft_p90_seconds: HistoryColumn;
  tpot_p50_seconds: HistoryColumn;
  e2e_p90_seconds: HistoryColumn;
  in_flight: HistoryColumn;
}

export interface ServiceHistory {
  service: string;
  from: number;
  to: number;
  step: number; // seconds per entry, as the server chose or was asked
  t: number[];
  desired: HistoryColumn;
  ready: HistoryColumn;
  current: HistoryColumn; // pending + starting + ready
  metrics: HistoryMetric[]; // empty for policies that read no metric
  gateway: GatewayHistoryColumns; // all null without gateway traffic
}

export interface HistoryQuery {
  from?: number;
  to?: number;
  step?: number;
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
  host: string | null; // null while a cluster engine has not placed the replica
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
  gpu_type?: string | null; // the GPU's type key when leased; null = unknown
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

// ---- Tasks and experiments (docs/api.md "Tasks"). Times here are Unix seconds (numbers),
// null when unset; parameters keep their scalar types.

export type ParamScalar = number | string | boolean;

export type ObjectiveKind = 'max_throughput' | 'min_latency' | 'max_throughput_under_latency';

export interface TaskObjective {
  kind: ObjectiveKind | string;
  latency_metric: string; // ttft | tpot | itl | e2e
  percentile: number; // 50 | 90 | 99
  throughput_floor_rps: number;
  latency_ceiling_seconds: number;
  description: string;
}

export interface TaskSummary {
  id: number;
  name: string;
  model: string;
  status: string; // queued | running | succeeded | failed | cancelled
  priority: number;
  experiments_total: number;
  experiments_done: number;
  experiments_failed: number;
  experiments_running: number;
  best_experiment_id: number | null;
  objective: TaskObjective;
  message: string;
  created_at: number;
  finished_at: number | null;
}

export interface TaskBench {
  mode: string; // closed_loop | poisson
  concurrency: number;
  rate_per_second: number;
  input_tokens: number;
  output_tokens: number;
  duration_seconds: number;
}

export interface Task extends TaskSummary {
  source_text: string;
  parameters: Record<string, ParamScalar | ParamScalar[]>;
  server_command: string[];
  bench: TaskBench;
  gpu_wait_timeout_seconds: number;
  max_parallel: number;
  experiments: Experiment[];
}

export interface AllocatedGpu {
  index: number;
  uuid: string;
  node: string;
  name: string;
  memory_free_mb: number;
  memory_total_mb: number;
  utilization_percent: number | null;
  score: number;
}

export interface ExperimentGpuInfo {
  count: number;
  model: string;
  indices: number[];
  allocation_method: string;
  gpus: AllocatedGpu[];
}

// {min, max, mean} of one metric over the monitoring window; null without readings.
export interface MetricStats {
  min: number | null;
  max: number | null;
  mean: number | null;
  samples?: number;
}

// Per GPU: exactly the keys `gpuscale monitor -o json` prints.
export interface GpuMonitorStats {
  name: string;
  utilization: MetricStats;
  memory_used_mb: MetricStats;
  memory_usage_percent: MetricStats;
  temperature_c: MetricStats;
  power_draw_w: MetricStats;
}

export interface GpuMonitoring {
  monitoring_duration_seconds: number;
  samples: number;
  gpus: Record<string, GpuMonitorStats>;
}

export interface LatencyStats {
  count: number;
  mean: number | null;
  min: number | null;
  max: number | null;
  p50: number | null;
  p90: number | null;
  p99: number | null;
}

// `gpuscale bench -o json`'s report keys.
export interface BenchReport {
  requests_completed: number;
  requests_failed: number;
  errors_by_kind?: Record<string, number>;
  errors?: Record<string, number>;
  request_throughput_per_second: number;
  output_token_throughput_per_second: number;
  input_token_throughput_per_second: number;
  elapsed_seconds: number;
  ttft_seconds: LatencyStats;
  inter_token_latency_seconds: LatencyStats;
  time_per_output_token_seconds: LatencyStats;
  e2e_latency_seconds: LatencyStats;
  // Arrivals that waited for a free client (absent from reports stored before).
  requests_queued?: number;
  queue_wait_max_seconds?: number;
}

export interface Experiment {
  id: number;
  task_id: number;
  index: number;
  status: string; // queued | starting | running | succeeded | failed | cancelled
  parameters: Record<string, ParamScalar>;
  gpus_required: number;
  memory_mb_per_gpu: number;
  is_best: boolean;
  gpu_info: ExperimentGpuInfo | null;
  gpu_monitoring: GpuMonitoring | null;
  bench: BenchReport | null;
  server_argv: string[];
  pid: number;
  port: number;
  log_path: string;
  message: string;
  queued_at: number;
  started_at: number | null;
  finished_at: number | null;
}
