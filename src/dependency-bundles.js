// Dependencies the service loads as one file each instead of their hundreds (built at install by
// scripts/bundle-dependencies.ts, under node_modules/.cache). A module costs Node a resolution, a read and
// a link whatever its size: kysely alone is 262 of the thousand-odd modules a start loads, jsonwebtoken
// with what it requires (semver, jws, lodash's parts) about 75, uuid 20; each bundle loads in a fraction
// of that time. Only packages that nothing but the service's own code imports are bundled, each with its
// dependencies inside, and every import of one resolves to its bundle, so the process holds one copy of
// it. Where a bundle is missing or was built for another version of its package (an install without the
// dev tools, or a package updated since), the package loads as installed.
//
// JavaScript, imported first by src/main.js: the hook must be in place before the first import of kysely.
import { existsSync, readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { URL } from 'node:url';

/** The packages bundled (scripts/bundle-dependencies.ts builds them). */
export const BUNDLED_PACKAGES = ['kysely', 'jsonwebtoken', 'uuid'];

const root = new URL('../', import.meta.url);

/** Where the bundles are built. */
export const BUNDLES_DIRECTORY = new URL('node_modules/.cache/customer-chat/bundles/', root);

/** Where the bundle of `name` at `version` is: its file name says which version it holds. */
export function bundleUrl(name, version, directory = BUNDLES_DIRECTORY) {
  return new URL(`${name}@${version}.mjs`, directory);
}

function installedVersion(name) {
  try {
    return JSON.parse(readFileSync(new URL(`node_modules/${name}/package.json`, root), 'utf8')).version;
  } catch {
    return undefined;
  }
}

/**
 * Resolves each bundled package to its bundle in `directory` (a URL ending in /), where one was built for
 * the installed version. Answers which were.
 */
export function useDependencyBundles(directory = BUNDLES_DIRECTORY) {
  const bundles = new Map();
  for (const name of BUNDLED_PACKAGES) {
    const version = installedVersion(name);
    const url = version && bundleUrl(name, version, directory);
    if (url && existsSync(url)) bundles.set(name, url.href);
  }
  if (bundles.size > 0 && typeof registerHooks === 'function') {
    registerHooks({
      resolve: (specifier, context, next) => {
        const url = bundles.get(specifier);
        return url ? { url, format: 'module', shortCircuit: true } : next(specifier, context);
      },
    });
    return [...bundles.keys()];
  }
  return [];
}
