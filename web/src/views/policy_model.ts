// Pure helpers of the policy panel: what a service's policy aims at (from its spec, or from
// its stored rules when the spec has no policy block), whether stored rules apply to it at
// all, and the unit of a metric.

import type { JsonValue, Rule, Service } from '../api/types';
import { comparatorSymbol } from './rule_form_model';

export interface PolicyTarget {
  metric: string; // metric name (or PromQL) the policy reads
  target: number; // threshold or target value, in the metric's unit
  description: string; // "average_value 5 per replica", "> 10 (queue-high)"
}

type JsonObject = { [key: string]: JsonValue };

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function num(value: JsonValue | undefined): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function str(value: JsonValue | undefined): string | null {
  return typeof value === 'string' ? value : null;
}

function list(value: JsonValue | undefined): JsonObject[] {
  return Array.isArray(value) ? value.filter(isObject) : [];
}

function targetFamily(block: JsonObject): PolicyTarget[] {
  const out: PolicyTarget[] = [];
  for (const m of list(block.metrics)) {
    const name = str(m.name);
    const type = str(m.type) ?? 'AverageValue';
    const key = type === 'Value' ? 'value' : type === 'Utilization' ? 'average_utilization' : 'average_value';
    const target = num(m[key]);
    if (name && target !== null) out.push({ metric: name, target, description: `${type} target ${target}` });
  }
  for (const t of list(block.triggers)) {
    const name = str(t.name) ?? str(t.query);
    const target = num(t.threshold);
    if (name && target !== null) out.push({ metric: name, target, description: `KEDA threshold ${target}` });
  }
  return out;
}

function ruleTargets(rules: ReadonlyArray<Pick<Rule, 'metric' | 'threshold' | 'comparator' | 'name'>>): PolicyTarget[] {
  return rules.map((r) => ({
    metric: r.metric,
    target: r.threshold,
    description: `${comparatorSymbol(r.comparator)} ${r.threshold} (${r.name})`,
  }));
}

export function hasPolicyBlock(spec: JsonValue): boolean {
  return isObject(spec) && isObject(spec.policy);
}

// Stored rules (the /rules API and the page's rules form) drive only a `rules`-family service
// defined without a policy block; the daemon refuses them (409) for every other service.
export function readsStoredRules(service: Pick<Service, 'policy_family' | 'spec'>): boolean {
  return service.policy_family === 'rules' && !hasPolicyBlock(service.spec);
}

// Why a service has no rules form.
export function storedRulesNote(service: Pick<Service, 'name' | 'policy_family' | 'spec'>): string {
  if (service.policy_family === 'rules') {
    return 'Its rules are part of its spec (policy.rules): change them in the config file or with ' +
      `PUT /v1/services/${service.name}. Stored rules apply only to services defined without a policy block.`;
  }
  return `The ${service.policy_family} policy reads no scaling rules, so this page offers no rules form; ` +
    'stored rules drive services defined without a policy block.';
}

// Targets of the policy in `spec` (a service's spec JSON); stored `rules` when the spec has
// no policy block. Families without a metric target (ratio, capability, ...) give none.
export function policyTargets(spec: JsonValue, storedRules: readonly Rule[]): PolicyTarget[] {
  const policy = isObject(spec) ? spec.policy : undefined;
  if (!isObject(policy)) return ruleTargets(storedRules);
  const family = str(policy.family);
  const block = family ? policy[family] : undefined;
  if (family === 'rules') {
    const rules = (Array.isArray(block) ? block : []).filter(isObject).flatMap((r) => {
      const metric = str(r.metric);
      const threshold = num(r.threshold);
      return metric && threshold !== null
        ? [{ metric, threshold, comparator: str(r.comparator) ?? '', name: str(r.name) ?? metric }]
        : [];
    });
    return ruleTargets(rules);
  }
  if (!isObject(block)) return [];
  if (family === 'target') return targetFamily(block);
  if (family === 'kpa') {
    const concurrency = num(block.target_concurrency) ?? 100;
    const utilization = num(block.target_utilization_percentage) ?? 70;
    const target = (concurrency * utilization) / 100;
    return [{ metric: 'concurrency per replica', target, description: `KPA target ${target} per replica` }];
  }
  return [];
}

// The unit a metric's values are in, from Prometheus naming conventions (base units in
// the name: _seconds, _perc/ratio 0..1, counts of requests or tokens).
export function metricUnit(metric: string): string {
  if (/seconds/.test(metric)) return 's';
  if (/(_perc|ratio|usage)/.test(metric)) return 'ratio 0–1';
  if (/tokens/.test(metric)) return 'tokens';
  if (/(requests|concurrency)/.test(metric)) return 'requests';
  return 'value';
}
