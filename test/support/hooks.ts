// Loaded by mocha before any test file (.mocharc.json). Settings for the whole run, then the one
// shared harness is closed when every test has run.
process.env.NODE_ENV = 'test';
process.env.LOG_LEVEL ??= 'silent';
process.env.BCRYPT_COST ??= '4';

export const mochaHooks = {
  async afterAll() {
    const { closeHarness } = await import('./harness.ts');
    await closeHarness();
  },
};
