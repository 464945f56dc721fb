// Labels of a time axis (x = Unix seconds) and of the legend's time column, on a 24-hour
// clock: "14:05" (with seconds when ticks are less than a minute apart), and the date
// ("26 Nov") under the first tick and under each tick that starts a new day. Pure; a zone
// can be given (tests pin UTC), else the browser's.

// Minimum distance between two time ticks in CSS px. The widest label ("14:05:30", or
// "26 Nov" under it) is about 55 px in the dashboard's 12 px axis font, so neighbours keep
// a gap of 25 px or more at any width (uPlot's default of 50 lets them touch).
export const TIME_AXIS_SPACE_PX = 80;

function formatter(options: Intl.DateTimeFormatOptions, timeZone?: string): Intl.DateTimeFormat {
  return new Intl.DateTimeFormat('en-GB', { ...options, ...(timeZone ? { timeZone } : {}) });
}

export function timeAxisLabels(splits: readonly number[], incrementSeconds: number, timeZone?: string): string[] {
  const clock = formatter(incrementSeconds < 60
    ? { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false }
    : { hour: '2-digit', minute: '2-digit', hour12: false }, timeZone);
  const day = formatter({ day: 'numeric', month: 'short' }, timeZone);
  let previousDay = '';
  return splits.map((t) => {
    const date = new Date(t * 1000);
    const dayText = day.format(date);
    const newDay = dayText !== previousDay;
    previousDay = dayText;
    if (incrementSeconds >= 86400) return dayText;
    return newDay ? `${clock.format(date)}\n${dayText}` : clock.format(date);
  });
}

// "26 Nov 14:05:30": the legend's time column while the cursor is on the chart.
export function timeLegendLabel(t: number, timeZone?: string): string {
  return formatter({ day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', second: '2-digit',
    hour12: false }, timeZone).format(new Date(t * 1000));
}
