import { createRequire } from 'node:module';

// express-openapi-validator 5.6 finds a request's operation by compiling every path of the contract with
// path-to-regexp, at every request, until one matches (lookupRoute in its openapi.metadata.js; upstream
// pull request #1217 caches them). With the contract's hundred paths that was about a tenth of a cheap
// request's CPU. A compiled matcher depends only on the path and the options, and the validator only
// reads it (`regexp.exec` without the global flag, `keys`), so each is compiled once and kept, in the
// path-to-regexp module instance the validator itself loads. Remove this when the validator caches.

type PathToRegexp = (path: unknown, options?: Record<string, unknown>) => unknown;
const KEPT = Symbol.for('customer-chat.route-matchers');

const requireFromValidator = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
const pathToRegexpModule = requireFromValidator('path-to-regexp') as { pathToRegexp: PathToRegexp & { [KEPT]?: true } };

export function keepRouteMatchers(): void {
  if (pathToRegexpModule.pathToRegexp[KEPT]) return;
  const compile = pathToRegexpModule.pathToRegexp;
  const compiled = new Map<string, unknown>();
  const kept: PathToRegexp & { [KEPT]?: true } = (path, options) => {
    // The contract's paths are a fixed set; anything else (a caller passing its own paths) is not kept.
    if (typeof path !== 'string') return compile(path, options);
    // The validator's options are `{ sensitive, strict }`; any other option compiles afresh. (A for-in, not
    // Object.keys: this runs for every contract path the validator tries, at every request.)
    for (const k in options) if (k !== 'sensitive' && k !== 'strict') return compile(path, options);
    const key = `${path}\u0000${options?.sensitive === true}\u0000${options?.strict === true}`;
    let matcher = compiled.get(key);
    if (matcher === undefined) {
      matcher = compile(path, options);
      if (compiled.size < 10_000) compiled.set(key, matcher);
    }
    return matcher;
  };
  kept[KEPT] = true;
  pathToRegexpModule.pathToRegexp = kept;
}

/** For the test: the function the validator calls. */
export const validatorsPathToRegexp = () => pathToRegexpModule.pathToRegexp;
