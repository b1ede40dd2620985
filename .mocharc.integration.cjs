// The integration tier: the service in-process (supertest) on its database. On the embedded database
// each mocha worker has a PGlite of its own, so the files run in parallel; on one shared PostgreSQL they
// run one at a time, since a worker's queue consumers (webhooks, bots, workflows) would claim the rows
// another worker's tests wait for.
const parallel = !process.env.DATABASE_URL && process.env.TEST_SERIAL !== '1';
// Each file's database is made before its first test, with time for it (test/support/hooks.ts); a file
// starts on a fresh one in either mode, as several tests count what their database has seen.
process.env.CHAT_TEST_WARM_HARNESS = '1';

module.exports = {
  extension: ['ts'],
  require: ['test/support/hooks.ts'],
  timeout: 30000,
  reporter: 'spec',
  // Files still at test/'s top level run here too, so that none is left out.
  spec: ['test/integration/**/*.test.ts', 'test/*.test.ts'],
  parallel,
  jobs: 2,
};
