// What a chart's legend shows for a line (pure; unit-tested): the value under the cursor, or
// without a cursor the line's last reading; nothing for a line without a reading there, so
// that a legend never shows a dash beside a line that has data.

// Units that read badly after a number in the legend ("3.5 value") are left off there.
function legendUnit(unit: string): string {
  return unit === 'value' || unit.startsWith('ratio') ? '' : unit;
}

export function formatLegendValue(value: number | null | undefined, unit: string, integers: boolean): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '';
  const text = integers ? String(Math.round(value)) : String(Number(value.toPrecision(3)));
  const suffix = legendUnit(unit);
  return suffix ? `${text} ${suffix}` : text;
}

// The last reading of a column, or null when it has none.
export function lastValue(values: ArrayLike<number | null | undefined>): number | null {
  for (let i = values.length - 1; i >= 0; i--) {
    const v = values[i];
    if (v !== null && v !== undefined && Number.isFinite(v)) return v;
  }
  return null;
}
