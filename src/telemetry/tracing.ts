import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { register as registerImportHooks } from 'import-in-the-middle/register-hooks.mjs';
import { operationOf } from '../http/metrics.ts';

let provider: NodeTracerProvider | undefined;

/**
 * Traces HTTP requests (named by operationId), PostgreSQL queries and WebSocket upgrades, exported over
 * OTLP/HTTP to `endpoint` (`<endpoint>/v1/traces`, as OTEL_EXPORTER_OTLP_ENDPOINT means). Must run before
 * pg or the app is imported: src/telemetry/preload.ts calls it.
 */
export function startTracing(endpoint: string, options: { serviceName?: string; batch?: { scheduledDelayMillis?: number } } = {}): void {
  if (provider) return;
  // pg is imported from ES modules: its exports can only be wrapped by a loader hook.
  registerImportHooks({ include: ['pg'] });
  provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME ?? options.serviceName ?? 'customer-chat-api' }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint.replace(/\/$/, '')}/v1/traces` }), options.batch ?? {}),
    ],
  });
  provider.register();
  registerInstrumentations({
    instrumentations: [
      new HttpInstrumentation({
        // Outgoing calls to the collector itself are not traced (each export would make another span).
        ignoreOutgoingRequestHook: (req) => String(req.path ?? '').startsWith('/v1/traces'),
        // The span is named by the operation (a route template), never by the raw URL.
        applyCustomAttributesOnSpan: (span, req, res) => {
          // Only the server's side: an outgoing request (a ClientRequest) has getHeader, an incoming one not.
          if ('getHeader' in req) return;
          const operation = operationOf(req as never, res.statusCode ?? 0);
          span.updateName(`${req.method ?? 'HTTP'} ${operation}`);
          span.setAttribute('chat.operation', operation);
        },
      }),
      new PgInstrumentation({ requireParentSpan: true }),
    ],
  });
}

/** Whether startTracing ran in this process. */
export const tracingStarted = (): boolean => provider !== undefined;

/**
 * A span for each WebSocket upgrade, from the request to the first bytes answered (101, or the refusal):
 * HTTP instrumentation sees only requests. Credential checks and their queries are its children.
 */
export function traceUpgrades(server: Server): void {
  const tracer = trace.getTracer('customer-chat-api');
  const emit = server.emit;
  server.emit = function (this: Server, event: string, ...args: unknown[]) {
    if (event !== 'upgrade') return emit.apply(this, [event, ...args] as never);
    const [req, socket] = args as [{ url?: string }, Duplex];
    const { write, end: finish } = socket;
    const span = tracer.startSpan('WS upgrade', { kind: SpanKind.SERVER, attributes: { 'url.path': new URL(req.url ?? '/', 'http://x').pathname } });
    let ended = false;
    const end = (status: number | undefined) => {
      if (ended) return;
      ended = true;
      if (status) span.setAttribute('http.response.status_code', status);
      if (!status || status >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    // The answer's first bytes are its status line, written (101) or ended with (a refusal).
    const statusOf = (chunk: unknown) => {
      const head = typeof chunk === 'string' ? chunk.slice(0, 16) : Buffer.isBuffer(chunk) ? chunk.subarray(0, 16).toString() : '';
      const match = /^HTTP\/1\.1 (\d{3})/.exec(head);
      return match ? Number(match[1]) : undefined;
    };
    for (const method of ['write', 'end'] as const) {
      const original = socket[method];
      socket[method] = function (this: unknown, chunk: unknown, ...rest: unknown[]) {
        end(statusOf(chunk));
        socket.write = write;
        socket.end = finish;
        return (original as (...a: unknown[]) => unknown).apply(this, [chunk, ...rest]);
      } as never;
    }
    socket.once('close', () => end(undefined));
    return context.with(trace.setSpan(context.active(), span), () => emit.apply(this, [event, ...args] as never));
  } as typeof server.emit;
}

/** Sends the spans still buffered; the service calls it as it stops. */
export async function stopTracing(): Promise<void> {
  await provider?.shutdown();
  provider = undefined;
}
