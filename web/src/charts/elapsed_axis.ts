// Labels of an axis of elapsed seconds (a simulation's time from the trace's start): "45 s",
// "5 min", "1 h 30 min". Ticks fall on whole seconds, minutes and hours (ELAPSED_INCRS),
// not on uPlot's decimal steps (which would put them at 250 s, 500 s). Pure; unit-tested.

export const ELAPSED_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
  172800, 604800];

// The widest label ("23 h 45 min") is about 70 px in the axis font.
export const ELAPSED_AXIS_SPACE_PX = 90;

export function formatElapsed(seconds: number): string {
  if (!Number.isFinite(seconds)) return '';
  const s = Math.round(seconds);
  const sign = s < 0 ? '−' : '';
  const a = Math.abs(s);
  if (a < 60) return `${sign}${a} s`;
  if (a < 3600) return `${sign}${Math.floor(a / 60)} min${a % 60 ? ` ${a % 60} s` : ''}`;
  const m = Math.floor((a % 3600) / 60);
  return `${sign}${Math.floor(a / 3600)} h${m ? ` ${m} min` : ''}`;
}
