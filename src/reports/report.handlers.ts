import { Readable } from 'node:stream';
import type { Request } from 'express';
import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import { type ReportService, seriesCsv, summaryCsv } from './report.service.ts';

/** CSV when asked by `format=csv` or by `Accept: text/csv` (and JSON not preferred). */
const wantsCsv = (req: Request, format: string | undefined) => format === 'csv' || (format === undefined && req.accepts(['application/json', 'text/csv']) === 'text/csv');

// The contract gives both answers; a CSV one is written as it is (the validator checks JSON bodies).
const asCsv = (text: string, name: string) =>
  ({ status: 200, stream: Readable.from([text]), headers: { 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': `attachment; filename="${name}.csv"` } }) as never;

export const reportHandlers = (reports: ReportService): Pick<Handlers, 'getReportSummary' | 'getReportSeries'> => ({
  getReportSummary: async ({ principal, query, req }) => {
    const summary = await reports.summary(requirePrincipal(principal), query);
    return wantsCsv(req, query.format) ? asCsv(summaryCsv(summary), 'report-summary') : { status: 200, body: summary };
  },
  getReportSeries: async ({ principal, query, req }) => {
    const series = await reports.series(requirePrincipal(principal), query);
    return wantsCsv(req, query.format) ? asCsv(seriesCsv(series), 'report-series') : { status: 200, body: series };
  },
});
