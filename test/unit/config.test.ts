import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/config.ts';

describe('configuration', () => {
  it('has working defaults on a bare machine', () => {
    const config = loadConfig({});
    expect(config).to.include({ env: 'development', port: 3000, dataDir: './data', databaseUrl: undefined, bcryptCost: 12 });
    expect(config.validateResponses).to.equal(true);
  });

  it('names every bad variable at once', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://localhost/db', LOG_LEVEL: 'loud', BCRYPT_COST: '40' });
    } catch (e) {
      error = e;
    }
    expect(error).to.be.instanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(Object.keys(problems).sort()).to.deep.equal(['BCRYPT_COST', 'DATABASE_URL', 'LOG_LEVEL', 'PORT']);
    expect((error as Error).message).to.contain('PORT').and.contain('DATABASE_URL');
  });

  it('refuses to start in production without a strong JWT_SECRET', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).to.throw(ConfigError, /JWT_SECRET/);
    expect(() => loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'short' })).to.throw(ConfigError, /JWT_SECRET/);
    expect(loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(32) }).jwtSecret).to.equal('x'.repeat(32));
  });

  it('accepts the embedded database forms of DATABASE_URL', () => {
    expect(loadConfig({ DATABASE_URL: 'pglite://memory' }).databaseUrl).to.equal('pglite://memory');
    expect(loadConfig({ DATABASE_URL: 'postgresql://u@h:5432/d' }).databaseUrl).to.equal('postgresql://u@h:5432/d');
  });
});
