// Reports: how fast the team answers and solves, and how satisfied customers are, over a range of days,
// for the whole team or one department, agent or label. Owners and admins only (the API refuses the
// others); loaded when first opened, so the inbox's first load does not carry it.
import { useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { Link, Navigate } from 'react-router';
import { ErrorText } from '../../../components/ErrorText.tsx';
import { $api, fetchClient, type Schemas } from '../../../lib/api.ts';
import { useLabels, useTeam } from '../../../lib/hooks.ts';
import { day, duration, percent, pointLabel, score } from '../format.ts';
import { BarChart, LineChart } from './Charts.tsx';

type Filters = { from: string; to: string; department_id: string; agent_id: string; label_id: string };
type Query = { from: string; to: string; department_id?: string; agent_id?: string; label_id?: string };

const queryOf = (f: Filters): Query => ({
  from: f.from,
  to: f.to,
  ...(f.department_id ? { department_id: f.department_id } : {}),
  ...(f.agent_id ? { agent_id: f.agent_id } : {}),
  ...(f.label_id ? { label_id: f.label_id } : {}),
});

/** The range's problem, in words, before asking the API (which says the same with a 400). */
function rangeProblem(f: Filters): string | undefined {
  if (!f.from || !f.to) return 'Choose the first and the last day.';
  if (f.to < f.from) return 'The last day comes before the first.';
  if ((Date.parse(f.to) - Date.parse(f.from)) / 86_400_000 > 400) return 'A report covers at most 400 days.';
  return undefined;
}

export default function ReportsPage() {
  const { team, me } = useTeam();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = 'Reports · Customer Chat';
    heading.current?.focus();
  }, []);
  if (team.isPending) return <p role="status">Loading…</p>;
  if (me?.role !== 'owner' && me?.role !== 'admin') return <Navigate to="/inbox/mine" replace />;
  return (
    <div className="reports">
      <header className="top">
        <span className="brand">Reports</span>
        <Link to="/inbox/mine">Back to the inbox</Link>
        <Link to="/settings">Settings</Link>
      </header>
      <main className="reports-main" aria-labelledby="reports-heading">
        <h1 id="reports-heading" ref={heading} tabIndex={-1}>
          Reports
        </h1>
        <Report members={team.data?.data ?? []} />
      </main>
    </div>
  );
}

function Report({ members }: { members: Schemas['TeamMember'][] }) {
  const [filters, setFilters] = useState<Filters>({ from: day(29), to: day(0), department_id: '', agent_id: '', label_id: '' });
  const departments = useQuery($api.queryOptions('get', '/v1/departments', {}, { staleTime: 300_000 }));
  const labels = useLabels();
  const problem = rangeProblem(filters);
  const query = queryOf(filters);
  const summaryQuery = useQuery({ ...$api.queryOptions('get', '/v1/reports/summary', { params: { query } }), enabled: !problem });
  const seriesQuery = useQuery({ ...$api.queryOptions('get', '/v1/reports/series', { params: { query } }), enabled: !problem });
  // JSON here (the CSV form is asked for only by the downloads).
  const summary = { ...summaryQuery, data: summaryQuery.data as Schemas['ReportSummary'] | undefined };
  const series = { ...seriesQuery, data: seriesQuery.data as Schemas['ReportSeries'] | undefined };
  const set = (key: keyof Filters) => (e: { target: { value: string } }) => setFilters((f) => ({ ...f, [key]: e.target.value }));

  return (
    <>
      <form className="report-filters" aria-label="Report filters" onSubmit={(e) => e.preventDefault()}>
        <div className="field">
          <label htmlFor="report-from">From</label>
          <input id="report-from" type="date" value={filters.from} max={filters.to || undefined} onChange={set('from')} required />
        </div>
        <div className="field">
          <label htmlFor="report-to">To</label>
          <input id="report-to" type="date" value={filters.to} min={filters.from || undefined} onChange={set('to')} required />
        </div>
        <div className="field">
          <label htmlFor="report-department">Department</label>
          <select id="report-department" value={filters.department_id} onChange={set('department_id')}>
            <option value="">All departments</option>
            {(departments.data?.data ?? []).map((d) => (
              <option key={d.id} value={d.id}>
                {d.name}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="report-agent">Agent</label>
          <select id="report-agent" value={filters.agent_id} onChange={set('agent_id')}>
            <option value="">Everyone</option>
            {members.map((m) => (
              <option key={m.user_id} value={m.user_id}>
                {m.name}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="report-label">Label</label>
          <select id="report-label" value={filters.label_id} onChange={set('label_id')}>
            <option value="">Any label</option>
            {(labels.data?.data ?? []).map((l) => (
              <option key={l.id} value={l.id}>
                {l.name}
              </option>
            ))}
          </select>
        </div>
      </form>
      {problem && (
        <p className="error" role="alert">
          {problem}
        </p>
      )}
      {!problem && <Downloads query={query} />}
      <ErrorText error={summary.error ?? series.error} />
      {!problem && (summary.isPending || series.isPending) && (
        <p className="muted" role="status">
          Loading the report…
        </p>
      )}
      {summary.data && <Summary summary={summary.data} />}
      {summary.data && series.data && <Charts summary={summary.data} series={series.data} />}
    </>
  );
}

/** CSV of the summary and of the daily series: fetched with the login, then handed to the browser as a file. */
function Downloads({ query }: { query: Query }) {
  const [error, setError] = useState<unknown>();
  const save = async (kind: 'summary' | 'series') => {
    setError(undefined);
    const params = { params: { query: { ...query, format: 'csv' as const } }, parseAs: 'text' as const };
    const { data, error } = kind === 'summary' ? await fetchClient.GET('/v1/reports/summary', params) : await fetchClient.GET('/v1/reports/series', params);
    if (error !== undefined || typeof data !== 'string') return setError(error);
    const url = URL.createObjectURL(new Blob([data], { type: 'text/csv' }));
    const link = document.createElement('a');
    link.href = url;
    link.download = `report-${kind}-${query.from}-to-${query.to}.csv`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  };
  return (
    <div className="buttons downloads">
      <button type="button" onClick={() => void save('summary').catch(setError)}>
        Download the summary (CSV)
      </button>
      <button type="button" onClick={() => void save('series').catch(setError)}>
        Download the daily figures (CSV)
      </button>
      <ErrorText error={error} />
    </div>
  );
}

const TIMES = [
  ['first_response', 'First response'],
  ['response', 'Every response'],
  ['resolution', 'Resolution (open to close)'],
  ['queue_wait', 'Waiting in the queue'],
] as const;

function Summary({ summary: s }: { summary: Schemas['ReportSummary'] }) {
  return (
    <section aria-labelledby="summary-heading">
      <h2 id="summary-heading">
        Summary, {s.from} to {s.to} <span className="muted">({s.time_zone})</span>
      </h2>
      <dl className="figures">
        <div>
          <dt>Conversations</dt>
          <dd>{s.conversations}</dd>
        </div>
        <div>
          <dt>First response, median</dt>
          <dd>{duration(s.first_response.median_seconds)}</dd>
        </div>
        <div>
          <dt>Resolution, median</dt>
          <dd>{duration(s.resolution.median_seconds)}</dd>
        </div>
        <div>
          <dt>Satisfaction</dt>
          <dd>{score(s.csat.score)}</dd>
        </div>
        <div>
          <dt>Survey response rate</dt>
          <dd>{percent(s.csat.response_rate)}</dd>
        </div>
        <div>
          <dt>Reopened</dt>
          <dd>{s.reopens}</dd>
        </div>
        <div>
          <dt>Handed over by a bot</dt>
          <dd>{s.handoffs}</dd>
        </div>
      </dl>
      <p className="muted">
        {s.csat.responses} of {s.csat.surveys} surveys answered; {percent(s.csat.satisfied_share)} rated 4 or 5.
      </p>
      <div className="table-wrap">
        <table className="report-times">
          <caption>Times: all hours, and within business hours</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Count</th>
              <th scope="col">Median</th>
              <th scope="col">90th percentile</th>
              <th scope="col">Average</th>
              <th scope="col">Median, business hours</th>
              <th scope="col">90th percentile, business hours</th>
            </tr>
          </thead>
          <tbody>
            {TIMES.map(([key, label]) => {
              const d = s[key];
              return (
                <tr key={key}>
                  <th scope="row">{label}</th>
                  <td>{d.count}</td>
                  <td>{duration(d.median_seconds)}</td>
                  <td>{duration(d.p90_seconds)}</td>
                  <td>{duration(d.average_seconds)}</td>
                  <td>{duration(d.business_hours.median_seconds)}</td>
                  <td>{duration(d.business_hours.p90_seconds)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function bucketLabel(buckets: Schemas['ReportBucket'][], i: number): string {
  const b = buckets[i]!;
  if (b.le_seconds !== null) return `Up to ${duration(b.le_seconds)}`;
  return `Over ${duration(buckets[i - 1]?.le_seconds ?? 0)}`;
}

function bucketTick(buckets: Schemas['ReportBucket'][], i: number): string {
  const b = buckets[i]!;
  return b.le_seconds !== null ? `≤ ${duration(b.le_seconds)}` : `> ${duration(buckets[i - 1]?.le_seconds ?? 0)}`;
}

function Charts({ summary, series }: { summary: Schemas['ReportSummary']; series: Schemas['ReportSeries'] }) {
  const buckets = summary.first_response_buckets;
  const answered = buckets.reduce((n, b) => n + b.count, 0);
  const points = series.points.map((p) => ({ ...p, label: pointLabel(p.start, series.time_zone, series.group_by === 'hour') }));
  const total = points.reduce((n, p) => n + p.conversations, 0);
  const busiest = points.reduce<(typeof points)[number] | undefined>((best, p) => (!best || p.conversations > best.conversations ? p : best), undefined);
  const withMedian = points.filter((p) => p.first_response.median_seconds !== null);
  return (
    <section aria-labelledby="charts-heading">
      <h2 id="charts-heading">Charts</h2>
      <div className="charts">
        <BarChart
          title="How soon the first response came"
          description={`${answered} first responses: ${buckets.map((b, i) => `${bucketLabel(buckets, i)}: ${b.count}`).join('; ')}.`}
          bars={buckets.map((b, i) => ({ label: bucketLabel(buckets, i), tick: bucketTick(buckets, i), value: b.count, text: String(b.count) }))}
          columns={['First response', 'Conversations']}
        />
        <BarChart
          title="Conversations per day"
          description={`${total} conversations over ${points.length} days${busiest && busiest.conversations > 0 ? `; the most on ${busiest.label}, ${busiest.conversations}` : ''}. The table below has every day.`}
          bars={points.map((p) => ({ label: p.label, value: p.conversations, text: String(p.conversations) }))}
          columns={['Day', 'Conversations']}
          table="folded"
        />
        <LineChart
          title="First response time per day (median)"
          description={
            withMedian.length
              ? `${withMedian.length} days with first responses; from ${duration(Math.min(...withMedian.map((p) => p.first_response.median_seconds!)))} to ${duration(Math.max(...withMedian.map((p) => p.first_response.median_seconds!)))}. The daily table below has every day.`
              : 'No first response in the range.'
          }
          points={points.map((p) => ({ label: p.label, value: p.first_response.median_seconds }))}
          format={duration}
          least={60}
        />
      </div>
      <details className="daily">
        <summary>Every day's figures as a table</summary>
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Figures per day</caption>
            <thead>
              <tr>
                <th scope="col">Day</th>
                <th scope="col">Conversations</th>
                <th scope="col">First responses</th>
                <th scope="col">First response, median</th>
                <th scope="col">Resolutions</th>
                <th scope="col">Resolution, median</th>
                <th scope="col">Survey answers</th>
                <th scope="col">Satisfaction</th>
              </tr>
            </thead>
            <tbody>
              {points.map((p) => (
                <tr key={p.start}>
                  <th scope="row">{p.label}</th>
                  <td>{p.conversations}</td>
                  <td>{p.first_response.count}</td>
                  <td>{duration(p.first_response.median_seconds)}</td>
                  <td>{p.resolution.count}</td>
                  <td>{duration(p.resolution.median_seconds)}</td>
                  <td>{p.csat.responses}</td>
                  <td>{score(p.csat.score)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </section>
  );
}
