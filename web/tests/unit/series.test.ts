import { describe, expect, it } from 'vitest';
import { countPoints, gpuHistorySeries } from '../../src/charts/series';
import { gpu } from './fixtures';

const T0 = '2025-01-01T00:00:00Z';
const T1 = '2025-01-01T00:00:05Z';
const T2 = '2025-01-01T00:00:10Z';

describe('GPU history series', () => {
  const points = [
    { timestamp: T1, gpus: [gpu(1, { utilization_percent: 20 }), gpu(0, { utilization_percent: 10 })] },
    { timestamp: T0, gpus: [gpu(0, { utilization_percent: 5 })] },
    { timestamp: T2, gpus: [gpu(0, { utilization_percent: null }), gpu(1, { utilization_percent: 30 })] },
  ];

  it('orders points by time and draws one line per GPU with gaps', () => {
    const data = gpuHistorySeries(points, 'utilization');
    expect(data.x).toEqual([0, 5, 10].map((s) => Date.parse(T0) / 1000 + s));
    expect(data.series).toEqual([
      { label: 'GPU 0', values: [5, 10, null] },
      { label: 'GPU 1', values: [null, 20, 30] },
    ]);
    expect(countPoints(data)).toBe(4);
  });

  it('derives memory percent, temperature and power', () => {
    const one = [{ timestamp: T0, gpus: [gpu(0, { memory_used_mb: 20, memory_total_mb: 80, temperature_c: 70, power_draw_w: 400 })] }];
    expect(gpuHistorySeries(one, 'memory').series[0]?.values).toEqual([25]);
    expect(gpuHistorySeries(one, 'temperature').series[0]?.values).toEqual([70]);
    expect(gpuHistorySeries(one, 'power').series[0]?.values).toEqual([400]);
  });

  it('gives an empty chart for an empty history and drops bad timestamps', () => {
    expect(gpuHistorySeries([], 'power')).toEqual({ x: [], series: [] });
    const data = gpuHistorySeries([{ timestamp: 'nope', gpus: [gpu(0)] }], 'power');
    expect(countPoints(data)).toBe(0);
  });
});
