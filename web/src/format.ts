// Formatting of API values for display, always with units. Null (a reading the backend does
// not provide) shows as an em dash. Pure functions. Dates and times are ISO 8601 in the
// browser's local time zone, whatever its locale: "2026-12-05 14:03:22" (date first, 24-hour
// clock, a space for the T), never a locale's "05/12/2026", which reads differently in each
// country. A zone can be given (tests pin UTC).

export const MISSING = '—';

function fixed(value: number, digits: number): string {
  return value.toFixed(digits);
}

export function formatPercent(value: number | null | undefined, digits = 0): string {
  return value === null || value === undefined || !Number.isFinite(value)
    ? MISSING
    : `${fixed(value, digits)} %`;
}

// MiB (the API's _mb fields, as NVML reports them) in GiB above 1 GiB.
export function formatMib(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return MISSING;
  if (Math.abs(value) >= 1024) return `${fixed(value / 1024, 1)} GiB`;
  return `${fixed(value, 0)} MiB`;
}

export function formatMemory(usedMb: number | null, totalMb: number | null): string {
  if (usedMb === null && totalMb === null) return MISSING;
  return `${formatMib(usedMb)} / ${formatMib(totalMb)}`;
}

// used / total as a percentage, null when either is missing or total is 0.
export function memoryPercent(usedMb: number | null, totalMb: number | null): number | null {
  if (usedMb === null || totalMb === null || totalMb <= 0) return null;
  return (100 * usedMb) / totalMb;
}

export function formatTemperature(celsius: number | null | undefined): string {
  return celsius === null || celsius === undefined ? MISSING : `${fixed(celsius, 0)} °C`;
}

export function formatPower(watts: number | null | undefined): string {
  return watts === null || watts === undefined ? MISSING : `${fixed(watts, 0)} W`;
}

// Availability score 0..1 (higher = freer GPU).
export function formatScore(score: number | null | undefined): string {
  return score === null || score === undefined ? MISSING : fixed(score, 2);
}

// "45 s", "3 min 05 s", "2 h 07 min", "3 d 4 h".
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds) || seconds < 0) {
    return MISSING;
  }
  const s = Math.floor(seconds);
  if (s < 60) return `${s} s`;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (s < 3600) return `${Math.floor(s / 60)} min ${pad(s % 60)} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${pad(Math.floor((s % 3600) / 60))} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

// RFC 3339 -> seconds since the epoch (NaN when unparsable).
export function parseTime(rfc3339: string): number {
  return Date.parse(rfc3339) / 1000;
}

// One instant's fields in the local zone (or `timeZone`), each zero-padded: the one place
// that turns an instant into calendar fields, so that every date on the page has the same
// form. Formatters are cached per zone (the time axis asks for every tick on every draw).
interface DateParts {
  year: string;
  month: string;
  day: string;
  hour: string;
  minute: string;
  second: string;
}

const partFormatters = new Map<string, Intl.DateTimeFormat>();

function dateParts(ms: number, timeZone?: string): DateParts {
  const key = timeZone ?? '';
  let formatter = partFormatters.get(key);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
      hourCycle: 'h23', ...(timeZone ? { timeZone } : {}),
    });
    partFormatters.set(key, formatter);
  }
  const parts: DateParts = { year: '', month: '', day: '', hour: '', minute: '', second: '' };
  for (const part of formatter.formatToParts(new Date(ms))) {
    if (part.type in parts) parts[part.type as keyof DateParts] = part.value;
  }
  return { ...parts, year: parts.year.padStart(4, '0') };
}

// "2026-12-05" (ISO 8601 calendar date, local zone unless `timeZone`).
export function formatIsoDate(ms: number, timeZone?: string): string {
  const p = dateParts(ms, timeZone);
  return `${p.year}-${p.month}-${p.day}`;
}

// "14:03:22", or "14:03" without seconds (24-hour clock, local zone unless `timeZone`).
export function formatIsoTime(ms: number, timeZone?: string, seconds = true): string {
  const p = dateParts(ms, timeZone);
  return seconds ? `${p.hour}:${p.minute}:${p.second}` : `${p.hour}:${p.minute}`;
}

// "2026-12-05 14:03:22" (local zone unless `timeZone`).
export function formatIsoDateTime(ms: number, timeZone?: string): string {
  const p = dateParts(ms, timeZone);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
}

// "14:03:27" (today) as wall-clock time; "2026-12-05 14:03:27" when `withDate`.
export function formatClock(rfc3339: string, withDate = false, timeZone?: string): string {
  const ms = Date.parse(rfc3339);
  if (Number.isNaN(ms)) return rfc3339 || MISSING;
  return withDate ? formatIsoDateTime(ms, timeZone) : formatIsoTime(ms, timeZone);
}

// "12 s ago" relative to `nowSeconds`.
export function formatAgo(rfc3339: string, nowSeconds: number): string {
  const at = parseTime(rfc3339);
  if (Number.isNaN(at)) return MISSING;
  return `${formatDuration(Math.max(0, nowSeconds - at))} ago`;
}

// "1 / 4 ready" style counts.
export function formatReplicaRange(min: number, max: number): string {
  return `${min}–${max} replicas`;
}

export function formatGpuList(gpus: readonly number[]): string {
  return gpus.length === 0 ? MISSING : gpus.map((g) => `GPU ${g}`).join(', ');
}

// Window choices for GPU history charts, seconds -> label.
export const HISTORY_WINDOWS: ReadonlyArray<{ seconds: number; label: string }> = [
  { seconds: 300, label: '5 min' },
  { seconds: 900, label: '15 min' },
  { seconds: 3600, label: '1 h' },
  { seconds: 21600, label: '6 h' },
  { seconds: 86400, label: '24 h' },
];

// Unix seconds (the tasks API's times) -> "2026-12-05 14:03:27", or "14:03:27" without
// `withDate`.
export function formatUnixTime(seconds: number | null | undefined, withDate = true, timeZone?: string): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return MISSING;
  const ms = seconds * 1000;
  if (Number.isNaN(new Date(ms).getTime())) return MISSING; // beyond what a Date holds
  return withDate ? formatIsoDateTime(ms, timeZone) : formatIsoTime(ms, timeZone);
}

// A throughput with its unit: "12.3 req/s", "1,234 tok/s" (1 decimal below 100).
export function formatRate(value: number | null | undefined, unit: string): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return MISSING;
  const text = Math.abs(value) >= 100
    ? Math.round(value).toLocaleString('en-US')
    : fixed(value, 1);
  return `${text} ${unit}`;
}

// A latency in seconds as "850 ms" below 1 s ("12.5 ms" below 100 ms), else "1.25 s".
export function formatLatency(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return MISSING;
  const ms = seconds * 1000;
  if (Math.abs(ms) < 100) return `${fixed(ms, 1)} ms`;
  if (Math.abs(ms) < 1000) return `${fixed(ms, 0)} ms`;
  return `${fixed(seconds, 2)} s`;
}
