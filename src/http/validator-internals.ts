import { createRequire } from 'node:module';

/**
 * `require` as express-openapi-validator itself resolves: its own files (`./middlewares/index.js`) and the
 * module instances it loads (`path-to-regexp`), which the patches beside this file (validator-compile.ts,
 * route-lookup.ts) change or call. Written against 5.6: test/integration/contract.test.ts fails if a release moves
 * what they patch.
 */
export const requireFromValidator = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));

/** The express-openapi-validator release the patches were written against: test/unit/dependency-patches.test.ts fails on another. */
export const PATCHED_VALIDATOR_VERSION = '5.6.2';
