// The rules editor's form values -> POST /v1/services/{name}/rules body. Numbers that parse
// are sent as numbers; anything else is sent as typed, so that the API (which validates
// every rule with the same parser as the config file) names what is wrong. Empty optional
// fields are left out and take the API's defaults.

import type { RuleInput } from '../api/types';

export const RULE_FIELDS = [
  'name',
  'source',
  'metric',
  'aggregation',
  'comparator',
  'threshold',
  'step_size',
  'cooldown_seconds',
  'min_replicas',
  'max_replicas',
  'enabled',
] as const;

export type RuleField = (typeof RULE_FIELDS)[number];

export const NUMERIC_RULE_FIELDS: readonly RuleField[] = [
  'threshold',
  'step_size',
  'cooldown_seconds',
  'min_replicas',
  'max_replicas',
];

export const AGGREGATIONS = ['average', 'max', 'min', 'sum'] as const;

// "12" -> 12, "1e3" -> 1000, "" -> undefined, "high" -> "high".
export function numberOrText(text: string): number | string | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : trimmed;
}

export function ruleInputFromForm(values: Partial<Record<RuleField, string>>, enabled: boolean): RuleInput {
  const body: RuleInput = {};
  for (const field of RULE_FIELDS) {
    if (field === 'enabled') continue;
    const raw = values[field] ?? '';
    if (NUMERIC_RULE_FIELDS.includes(field)) {
      const value = numberOrText(raw);
      if (value !== undefined) body[field] = value;
    } else if (raw.trim() !== '') {
      body[field] = raw.trim();
    }
  }
  body.enabled = enabled;
  return body;
}

// "GREATER_THAN" -> ">", for the rules table.
export function comparatorSymbol(comparator: string): string {
  switch (comparator) {
    case 'GREATER_THAN':
      return '>';
    case 'GREATER_THAN_OR_EQUAL':
      return '≥';
    case 'LESS_THAN':
      return '<';
    case 'LESS_THAN_OR_EQUAL':
      return '≤';
    default:
      return comparator;
  }
}
