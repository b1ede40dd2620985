// Figures in words: durations as a person reads them, shares as percentages, days as the tenant's calendar has them.

export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '–';
  // Under 10 s, tenths count (a median of 0.6 s is not 1 s, nor 0 s).
  if (seconds < 10) return `${Math.round(seconds * 10) / 10} s`;
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) {
    const rest = s % 60;
    return rest ? `${Math.floor(s / 60)} min ${rest} s` : `${s / 60} min`;
  }
  if (s < 86_400) {
    const minutes = Math.round((s % 3600) / 60);
    return minutes ? `${Math.floor(s / 3600)} h ${minutes} min` : `${Math.floor(s / 3600)} h`;
  }
  const hours = Math.round((s % 86_400) / 3600);
  return hours ? `${Math.floor(s / 86_400)} d ${hours} h` : `${Math.floor(s / 86_400)} d`;
}

export const percent = (share: number | null | undefined) => (share === null || share === undefined ? '–' : `${Math.round(share * 1000) / 10} %`);

export const score = (value: number | null | undefined) => (value === null || value === undefined ? '–' : `${value.toFixed(2)} of 5`);

/** A calendar day as YYYY-MM-DD in the browser's time, `daysAgo` days back. */
export function day(daysAgo = 0): string {
  const d = new Date();
  d.setDate(d.getDate() - daysAgo);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

/** A point's start as the day (or hour) it begins, in the report's time zone. */
export function pointLabel(start: string, timeZone: string, hourly: boolean): string {
  const options: Intl.DateTimeFormatOptions = hourly ? { timeZone, hour: '2-digit', minute: '2-digit' } : { timeZone, month: 'short', day: 'numeric' };
  try {
    return new Date(start).toLocaleString([], options);
  } catch {
    return new Date(start).toLocaleString([], { ...options, timeZone: undefined });
  }
}
