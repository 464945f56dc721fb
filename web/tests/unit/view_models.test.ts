import { describe, expect, it } from 'vitest';
import { eventSubject, kindOptions, matchesFilter, mergeEvents } from '../../src/views/events_model';
import { leaseHolders, ownerLabel } from '../../src/views/gpu_model';
import { metricUnit, policyTargets, readsStoredRules, storedRulesNote } from '../../src/views/policy_model';
import { comparatorSymbol, numberOrText, ruleInputFromForm } from '../../src/views/rule_form_model';
import { serviceWarnings } from '../../src/views/services_model';
import type { JsonValue } from '../../src/api/types';
import { event, gpu, rule, service } from './fixtures';

describe('rule form values', () => {
  it('sends numbers as numbers and anything else as typed, leaving empty optionals out', () => {
    const body = ruleInputFromForm({
      name: ' queue-high ', source: 'inference_framework', metric: 'vllm:num_requests_waiting',
      aggregation: 'average', comparator: 'GREATER_THAN', threshold: 'high', step_size: '-1',
      cooldown_seconds: '', min_replicas: '0', max_replicas: '  ',
    }, false);
    expect(body).toEqual({
      name: 'queue-high', source: 'inference_framework', metric: 'vllm:num_requests_waiting',
      aggregation: 'average', comparator: 'GREATER_THAN', threshold: 'high', step_size: -1,
      min_replicas: 0, enabled: false,
    });
  });

  it.each([['12', 12], ['1e3', 1000], ['0.5', 0.5], ['', undefined], ['NaN', 'NaN'], ['Infinity', 'Infinity'], ['ten', 'ten']])(
    'numberOrText(%j) = %j', (text, expected) => expect(numberOrText(text)).toEqual(expected));

  it('shows comparators as symbols', () => {
    expect(comparatorSymbol('GREATER_THAN_OR_EQUAL')).toBe('≥');
    expect(comparatorSymbol('LESS_THAN')).toBe('<');
    expect(comparatorSymbol('WEIRD')).toBe('WEIRD');
  });
});

describe('events view model', () => {
  it('filters by service and kind', () => {
    const e = event(1, { service: 'chat', kind: 'decision' });
    expect(matchesFilter(e, { service: '', kind: '' })).toBe(true);
    expect(matchesFilter(e, { service: 'chat', kind: 'decision' })).toBe(true);
    expect(matchesFilter(e, { service: 'batch', kind: '' })).toBe(false);
    expect(matchesFilter(e, { service: '', kind: 'replica_ready' })).toBe(false);
  });

  it('merges history and live events newest first without duplicates', () => {
    const merged = mergeEvents([event(3), event(1)], [event(2), event(3), event(5)], 3);
    expect(merged.map((e) => e.id)).toEqual([5, 3, 2]);
  });

  it('links an event to its service, or to the task and experiment it names', () => {
    expect(eventSubject(event(1, { service: 'chat' }))).toEqual({ kind: 'service', name: 'chat' });
    expect(eventSubject(event(2, { service: '', kind: 'experiment_failed', data: { task_id: 3, experiment_id: 10 } })))
      .toEqual({ kind: 'task', taskId: 3, experimentId: 10 });
    expect(eventSubject(event(3, { service: '', kind: 'task_submitted', data: { task_id: 3 } })))
      .toEqual({ kind: 'task', taskId: 3, experimentId: null });
    expect(eventSubject(event(4, { service: '', kind: 'daemon_started', data: null }))).toBeNull();
  });

  it('offers known and seen kinds, sorted', () => {
    const kinds = kindOptions(['replica_ready', 'decision'], ['zeta_kind', 'decision', '']);
    expect(kinds).toContain('replica_ready');
    expect(kinds[0]).toBe('decision');
    expect(kinds[kinds.length - 1]).toBe('zeta_kind');
    expect(kinds.filter((k) => k === 'decision')).toHaveLength(1);
  });
});

describe('GPU lease holders', () => {
  it('matches leases by uuid, else by index', () => {
    const gpus = [gpu(0), gpu(1), gpu(2, { uuid: '' })];
    const holders = leaseHolders(gpus, [
      { key: 'GPU-1', gpu_index: 0, node: '', owner: 'replica/chat-1', acquired_at: '' },
      { key: 'local#2', gpu_index: 2, node: 'local', owner: 'job/x', acquired_at: '' },
    ]);
    expect(holders.get(0)).toEqual([]);
    expect(holders.get(1)).toEqual(['replica/chat-1']);
    expect(holders.get(2)).toEqual(['job/x']);
    expect(ownerLabel('replica/chat-1')).toBe('chat-1');
    expect(ownerLabel('job/x')).toBe('job/x');
  });
});

describe('policy targets', () => {
  it('reads target metrics and KEDA triggers from the spec', () => {
    const spec: JsonValue = { policy: { family: 'target', target: {
      metrics: [{ name: 'vllm:num_requests_waiting', type: 'AverageValue', average_value: 5 },
        { name: 'vllm:kv_cache_usage_perc', type: 'Utilization', average_utilization: 0.8 }],
      triggers: [{ query: 'sum(vllm:num_requests_waiting)', threshold: 10 }] } } };
    expect(policyTargets(spec, []).map((t) => [t.metric, t.target])).toEqual([
      ['vllm:num_requests_waiting', 5], ['vllm:kv_cache_usage_perc', 0.8], ['sum(vllm:num_requests_waiting)', 10]]);
  });

  it('reads rules from the spec, or stored rules when the spec has no policy', () => {
    const spec = { policy: { family: 'rules', rules: [{ name: 'hi', metric: 'm', comparator: 'GREATER_THAN', threshold: 3 }] } };
    expect(policyTargets(spec, [])).toEqual([{ metric: 'm', target: 3, description: '> 3 (hi)' }]);
    expect(policyTargets({ name: 'x' }, [rule({ threshold: 7 })])[0]?.target).toBe(7);
  });

  it('computes the KPA per-replica target and gives none for other families', () => {
    expect(policyTargets({ policy: { family: 'kpa', kpa: { target_concurrency: 10 } } }, [])[0]?.target).toBe(7);
    expect(policyTargets({ policy: { family: 'ratio', ratio: {} } }, [])).toEqual([]);
  });

  it('offers stored rules only to a rules-family service without a policy block', () => {
    const ruled = service({ policy_family: 'rules', spec: { name: 'chat' } });
    const specRules = service({ policy_family: 'rules', spec: { policy: { family: 'rules', rules: [] } } });
    const target = service({ policy_family: 'target', spec: { policy: { family: 'target', target: {} } } });
    expect(readsStoredRules(ruled)).toBe(true);
    expect(readsStoredRules(specRules)).toBe(false);
    expect(readsStoredRules(target)).toBe(false);
    expect(storedRulesNote(target)).toContain('target policy reads no scaling rules');
    expect(storedRulesNote(specRules)).toContain('PUT /v1/services/chat');
  });

  it('names metric units from Prometheus conventions', () => {
    expect(metricUnit('vllm:e2e_request_latency_seconds')).toBe('s');
    expect(metricUnit('vllm:kv_cache_usage_perc')).toBe('ratio 0–1');
    expect(metricUnit('vllm:num_requests_waiting')).toBe('requests');
    expect(metricUnit('custom')).toBe('value');
  });
});

describe('service warnings', () => {
  const now = Date.parse('2025-01-01T00:01:00Z') / 1000;

  it('says nothing for a healthy service', () => {
    expect(serviceWarnings(service(), now)).toEqual([]);
  });

  it('names metric errors, replicas that cannot start and a spec not applied yet, in that order', () => {
    const warnings = serviceWarnings(service({
      metric_errors: ['scrape failed', 'another'],
      failure: "cannot start 'vllm': No such file or directory",
      apply_failure: {
        message: "spec not applied: slurm.token_file: cannot read token file '/etc/slurm.jwt'",
        attempts: 3,
        next_retry_at: '2025-01-01T00:01:04Z',
      },
    }), now);
    expect(warnings).toEqual([
      '2 metric error(s): scrape failed',
      "cannot start replicas: cannot start 'vllm': No such file or directory",
      "not applied (3 attempts, next try in 4 s): spec not applied: slurm.token_file: cannot read token file '/etc/slurm.jwt'",
    ]);
  });

  it('says one attempt, and leaves the retry out when its time cannot be read', () => {
    const [warning] = serviceWarnings(service({
      apply_failure: { message: 'spec not applied: x', attempts: 1, next_retry_at: 'soon' },
    }), now);
    expect(warning).toBe('not applied (1 attempt): spec not applied: x');
  });
});
