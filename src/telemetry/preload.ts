// Loaded before the service (`node --import ./src/telemetry/preload.ts src/server.ts`): tracing has to
// hook pg and http before anything imports them. Without OTEL_EXPORTER_OTLP_ENDPOINT it imports nothing
// and costs nothing (docs/operations.md, Tracing).
if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) {
  const { startTracing } = await import('./tracing.ts');
  startTracing(process.env.OTEL_EXPORTER_OTLP_ENDPOINT);
}
