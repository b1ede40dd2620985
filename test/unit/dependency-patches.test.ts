import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { expect } from 'chai';
import { PATCHED_PG_VERSION } from '../../src/db/database.ts';
import { PATCHED_VALIDATOR_VERSION } from '../../src/http/validator-internals.ts';

// The fast paths that replace internals of pg (ServiceClient, BeginThen in src/db/database.ts) and of
// express-openapi-validator (src/http/route-lookup.ts, validator-compile.ts, parameter-mutator.ts) read
// code that no release promises to keep. A release that moves it could break them without a type error,
// so each is written against one version, and a new version fails here until someone has read its
// changes, run the suite both ways (DEPENDENCY_PATCHES=false is the plain path; .ci/run runs a pass so),
// and moved the version below. The package.json ranges stay open; npm ci installs what the lock says.
const installed = (name: string): string => {
  const require = createRequire(import.meta.url);
  return (JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')) as { version: string }).version;
};

describe('dependency patches are written against the installed releases', () => {
  it('pg is the release ServiceClient was written against', () => {
    expect(installed('pg'), 'pg changed: re-read pg/lib/client.js and query.js against src/db/database.ts (ServiceClient, BeginThen), then update PATCHED_PG_VERSION').to.equal(PATCHED_PG_VERSION);
  });

  it('express-openapi-validator is the release the validator patches were written against', () => {
    expect(
      installed('express-openapi-validator'),
      'express-openapi-validator changed: re-read what src/http/route-lookup.ts, validator-compile.ts and parameter-mutator.ts replace, then update PATCHED_VALIDATOR_VERSION',
    ).to.equal(PATCHED_VALIDATOR_VERSION);
  });

  it('the lockfile pins both, so a fresh install gets the same release', () => {
    const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as { packages: Record<string, { version: string }> };
    expect(lock.packages['node_modules/pg']?.version).to.equal(PATCHED_PG_VERSION);
    expect(lock.packages['node_modules/express-openapi-validator']?.version).to.equal(PATCHED_VALIDATOR_VERSION);
  });
});
