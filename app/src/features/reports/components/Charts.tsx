// Charts in plain SVG, each with its numbers in a table beside it: the picture for the eye, the table
// for a screen reader and for anyone who wants the exact figures.
import { type ReactNode, useId } from 'react';

const W = 420;
const H = 220;
const PAD = { top: 12, right: 8, bottom: 30, left: 50 };

export interface Bar {
  label: string;
  value: number;
  /** The value as the table and the chart's description say it. */
  text: string;
  /** A shorter label under the bar, when the label is long (the table keeps the label). */
  tick?: string;
}

/** A nice upper bound for an axis: 1, 2 or 4 times a power of ten at or above the top value (its half is round too). */
function ceiling(top: number): number {
  if (top <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(top));
  for (const step of [1, 2, 4, 10]) if (step * power >= top) return step * power;
  return 10 * power;
}

function Axis({ max, format }: { max: number; format: (v: number) => string }) {
  return (
    <g className="axis" aria-hidden="true">
      {[0, 0.5, 1].map((f) => {
        const y = PAD.top + (H - PAD.top - PAD.bottom) * (1 - f);
        return (
          <g key={f}>
            <line x1={PAD.left} x2={W - PAD.right} y1={y} y2={y} className="grid" />
            <text x={PAD.left - 6} y={y + 4} textAnchor="end">
              {format(max * f)}
            </text>
          </g>
        );
      })}
    </g>
  );
}

/** Which x labels to write under the chart: at most seven, evenly spread. */
const labelEvery = (n: number) => Math.max(1, Math.ceil(n / 7));

export function BarChart(props: { title: string; description: string; bars: Bar[]; columns: [string, string]; format?: (v: number) => string; table?: 'shown' | 'folded'; children?: ReactNode }) {
  const id = useId();
  const { bars } = props;
  // Counts: at least 2, so that the middle line is a whole number.
  const max = Math.max(2, ceiling(Math.max(0, ...bars.map((b) => b.value))));
  const format = props.format ?? ((v: number) => String(Math.round(v * 10) / 10));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, bars.length);
  const every = labelEvery(bars.length);
  const table = (
    <table className="chart-table">
      <caption className="visually-hidden">{props.title}</caption>
      <thead>
        <tr>
          <th scope="col">{props.columns[0]}</th>
          <th scope="col">{props.columns[1]}</th>
        </tr>
      </thead>
      <tbody>
        {bars.map((b, i) => (
          <tr key={i}>
            <th scope="row">{b.label}</th>
            <td>{b.text}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
  return (
    <figure className="chart" aria-labelledby={`${id}-title`}>
      <figcaption id={`${id}-title`}>{props.title}</figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${props.title}. ${props.description}`}>
        <Axis max={max} format={format} />
        {bars.map((b, i) => {
          const h = (b.value / max) * plotH;
          const x = PAD.left + i * slot + slot * 0.15;
          return (
            <g key={i}>
              <rect className="bar" x={x} y={PAD.top + plotH - h} width={slot * 0.7} height={h}>
                <title>{`${b.label}: ${b.text}`}</title>
              </rect>
              {i % every === 0 && (
                <text x={x + slot * 0.35} y={H - PAD.bottom + 16} textAnchor="middle" className="tick" aria-hidden="true">
                  {b.tick ?? b.label}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      {props.children}
      {props.table === 'folded' ? (
        <details>
          <summary>The figures as a table</summary>
          {table}
        </details>
      ) : (
        table
      )}
    </figure>
  );
}

/** A line over the points that have a value (gaps where a day had none); its table is the series' own. */
export function LineChart(props: { title: string; description: string; points: { label: string; value: number | null }[]; format: (v: number) => string; least?: number }) {
  const id = useId();
  const { points } = props;
  const max = Math.max(props.least ?? 0, ceiling(Math.max(0, ...points.map((p) => p.value ?? 0))));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, points.length);
  const every = labelEvery(points.length);
  const xy = (i: number, v: number) => [PAD.left + i * slot + slot / 2, PAD.top + plotH - (v / max) * plotH] as const;
  // Runs of consecutive points with a value, each one polyline.
  const runs: [number, number][][] = [];
  points.forEach((p, i) => {
    if (p.value === null) return;
    const previous = points[i - 1];
    if (i === 0 || !previous || previous.value === null || runs.length === 0) runs.push([]);
    runs.at(-1)!.push([...xy(i, p.value)] as [number, number]);
  });
  return (
    <figure className="chart" aria-labelledby={`${id}-title`}>
      <figcaption id={`${id}-title`}>{props.title}</figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${props.title}. ${props.description}`}>
        <Axis max={max} format={props.format} />
        {runs.map((run, i) => (
          <polyline key={i} className="line" points={run.map(([x, y]) => `${x},${y}`).join(' ')} />
        ))}
        {points.map((p, i) => {
          const tick =
            i % every === 0 ? (
              <text key={`t${i}`} x={xy(i, 0)[0]} y={H - PAD.bottom + 16} textAnchor="middle" className="tick" aria-hidden="true">
                {p.label}
              </text>
            ) : null;
          if (p.value === null) return tick;
          const [x, y] = xy(i, p.value);
          return (
            <g key={i}>
              <circle className="point" cx={x} cy={y} r={3}>
                <title>{`${p.label}: ${props.format(p.value)}`}</title>
              </circle>
              {tick}
            </g>
          );
        })}
      </svg>
    </figure>
  );
}
