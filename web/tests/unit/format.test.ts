import { describe, expect, it } from 'vitest';
import {
  MISSING,
  formatAgo,
  formatClock,
  formatDuration,
  formatIsoDate,
  formatIsoDateTime,
  formatIsoTime,
  formatGpuList,
  formatMemory,
  formatMib,
  formatPercent,
  formatPower,
  formatScore,
  formatTemperature,
  memoryPercent,
} from '../../src/format';

describe('format', () => {
  it.each([
    [42.4, 0, '42 %'],
    [42.46, 1, '42.5 %'],
    [0, 0, '0 %'],
    [null, 0, MISSING],
    [Number.NaN, 0, MISSING],
  ])('formatPercent(%s, %s) = %s', (value, digits, expected) => {
    expect(formatPercent(value, digits)).toBe(expected);
  });

  it.each([
    [512, '512 MiB'],
    [1024, '1.0 GiB'],
    [81559, '79.6 GiB'],
    [null, MISSING],
  ])('formatMib(%s) = %s', (value, expected) => {
    expect(formatMib(value)).toBe(expected);
  });

  it('shows memory as used / total with units', () => {
    expect(formatMemory(40960, 81920)).toBe('40.0 GiB / 80.0 GiB');
    expect(formatMemory(null, null)).toBe(MISSING);
    expect(formatMemory(null, 81920)).toBe(`${MISSING} / 80.0 GiB`);
  });

  it('computes memory percent only when both readings exist', () => {
    expect(memoryPercent(20, 80)).toBe(25);
    expect(memoryPercent(null, 80)).toBeNull();
    expect(memoryPercent(20, 0)).toBeNull();
  });

  it('puts units on temperature, power and score', () => {
    expect(formatTemperature(61.6)).toBe('62 °C');
    expect(formatPower(312.4)).toBe('312 W');
    expect(formatScore(0.12345)).toBe('0.12');
    expect(formatTemperature(null)).toBe(MISSING);
    expect(formatPower(undefined)).toBe(MISSING);
  });

  it.each([
    [0, '0 s'],
    [59.9, '59 s'],
    [65, '1 min 05 s'],
    [3600 * 2 + 7 * 60, '2 h 07 min'],
    [86400 * 3 + 3600 * 4, '3 d 4 h'],
    [-1, MISSING],
    [null, MISSING],
  ])('formatDuration(%s) = %s', (seconds, expected) => {
    expect(formatDuration(seconds)).toBe(expected);
  });

  it('formats clock times in a given zone and ages relative to now', () => {
    expect(formatClock('2025-03-04T05:06:07Z', false, 'UTC')).toBe('05:06:07');
    expect(formatClock('2025-03-04T05:06:07Z', true, 'UTC')).toBe('2025-03-04 05:06:07');
    expect(formatClock('garbage')).toBe('garbage');
    const at = Date.parse('2025-03-04T05:06:07Z') / 1000;
    expect(formatAgo('2025-03-04T05:06:07Z', at + 75)).toBe('1 min 15 s ago');
  });

  it('writes dates as ISO 8601 (year-month-day, 24-hour clock) in the zone given, whatever the locale', () => {
    const ms = Date.parse('2026-12-05T14:03:22.750Z');
    expect(formatIsoDate(ms, 'UTC')).toBe('2026-12-05');
    expect(formatIsoTime(ms, 'UTC')).toBe('14:03:22');
    expect(formatIsoTime(ms, 'UTC', false)).toBe('14:03');
    expect(formatIsoDateTime(ms, 'UTC')).toBe('2026-12-05 14:03:22');
    // the zone's own calendar day and hour: UTC+9 is already the 6th, midnight is 00 (not 24)
    expect(formatIsoDateTime(Date.parse('2026-12-05T15:00:00Z'), 'Asia/Tokyo')).toBe('2026-12-06 00:00:00');
    expect(formatIsoDateTime(Date.parse('2026-12-05T14:03:22Z'), 'America/New_York')).toBe('2026-12-05 09:03:22');
    expect(formatClock('2026-01-02T03:04:05Z', true, 'UTC')).toBe('2026-01-02 03:04:05');
    // local time (no zone given): the same form
    expect(formatIsoDateTime(ms)).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  });

  it('lists GPUs by index', () => {
    expect(formatGpuList([0, 2])).toBe('GPU 0, GPU 2');
    expect(formatGpuList([])).toBe(MISSING);
  });
});
