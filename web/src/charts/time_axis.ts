// Labels of a time axis (x = Unix seconds) and of the legend's time column, on a 24-hour
// clock: "14:05" (with seconds when ticks are less than a minute apart), and the ISO 8601
// date ("2025-11-26") under the first tick and under each tick that starts a new day; the
// same forms as every other time on the page (src/format.ts). Pure; local time, or a zone
// when given (tests pin UTC).

import { formatIsoDate, formatIsoDateTime, formatIsoTime } from '../format';

// Minimum distance between two time ticks in CSS px. The widest label ("2025-11-26" under
// a tick) is about 62 px in the dashboard's 12 px axis font, so neighbours keep a gap of
// 18 px or more at any width (uPlot's default of 50 lets them touch).
export const TIME_AXIS_SPACE_PX = 80;

export function timeAxisLabels(splits: readonly number[], incrementSeconds: number, timeZone?: string): string[] {
  let previousDay = '';
  return splits.map((t) => {
    const ms = t * 1000;
    const dayText = formatIsoDate(ms, timeZone);
    const newDay = dayText !== previousDay;
    previousDay = dayText;
    if (incrementSeconds >= 86400) return dayText;
    const clock = formatIsoTime(ms, timeZone, incrementSeconds < 60);
    return newDay ? `${clock}\n${dayText}` : clock;
  });
}

// "2025-11-26 14:05:30": the legend's time column while the cursor is on the chart.
export function timeLegendLabel(t: number, timeZone?: string): string {
  return formatIsoDateTime(t * 1000, timeZone);
}
