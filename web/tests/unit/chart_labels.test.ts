import { describe, expect, it } from 'vitest';
import { formatLegendValue, lastValue } from '../../src/charts/legend';
import { TIME_AXIS_SPACE_PX, timeAxisLabels, timeLegendLabel } from '../../src/charts/time_axis';

describe('chart labels', () => {
  it('labels time ticks on a 24-hour clock, with the ISO date under the first tick of each day', () => {
    const midnight = Date.UTC(2025, 10, 26) / 1000;
    expect(timeAxisLabels([midnight - 600, midnight, midnight + 600], 600, 'UTC'))
      .toEqual(['23:50\n2025-11-25', '00:00\n2025-11-26', '00:10']);
    expect(timeAxisLabels([midnight, midnight + 30], 30, 'UTC')).toEqual(['00:00:00\n2025-11-26', '00:00:30']);
    expect(timeAxisLabels([midnight, midnight + 86400], 86400, 'UTC')).toEqual(['2025-11-26', '2025-11-27']);
    expect(timeLegendLabel(midnight + 3723, 'UTC')).toBe('2025-11-26 01:02:03');
    expect(TIME_AXIS_SPACE_PX).toBeGreaterThanOrEqual(70);
  });

  it('shows the last reading without a cursor and nothing for a line without one', () => {
    expect(lastValue([1, 2, null, undefined])).toBe(2);
    expect(lastValue([null, null])).toBeNull();
    expect(formatLegendValue(3.14159, 'ms', false)).toBe('3.14 ms');
    expect(formatLegendValue(2.6, 'replicas', true)).toBe('3 replicas');
    expect(formatLegendValue(0.0512, 'ratio 0–1', false)).toBe('0.0512');
    expect(formatLegendValue(null, 'ms', false)).toBe('');
  });
});
