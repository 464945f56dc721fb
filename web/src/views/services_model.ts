// What the services table warns about under a service's last decision: metric errors,
// replicas that cannot start, and a spec the daemon could not apply yet. Pure, for tests.

import type { Service } from '../api/types';
import { formatDuration, parseTime } from '../format';

export function serviceWarnings(service: Service, nowSeconds: number): string[] {
  const warnings: string[] = [];
  if (service.metric_errors.length > 0) {
    warnings.push(`${service.metric_errors.length} metric error(s): ${service.metric_errors[0]}`);
  }
  if (service.failure) warnings.push(`cannot start replicas: ${service.failure}`);
  const apply = service.apply_failure;
  if (apply) {
    const at = parseTime(apply.next_retry_at);
    const retry = Number.isNaN(at) ? '' : `, next try in ${formatDuration(Math.max(0, at - nowSeconds))}`;
    const tries = `${apply.attempts} attempt${apply.attempts === 1 ? '' : 's'}`;
    warnings.push(`not applied (${tries}${retry}): ${apply.message}`);
  }
  return warnings;
}
