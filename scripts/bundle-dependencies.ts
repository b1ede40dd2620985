// Builds the dependency bundles src/dependency-bundles.js loads (each package, with its dependencies, as one
// ES module; Node's built-in modules stay imports), with
// rolldown (Vite's bundler, installed with the dev tools). Run by postinstall; never fails the install (a
// start without them loads the packages as installed, only more slowly).
import { readFile, rename, rm, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { BUNDLED_PACKAGES, bundleUrl } from '../src/dependency-bundles.js';

const root = new URL('../', import.meta.url);

try {
  const { build } = await import('rolldown');
  for (const name of BUNDLED_PACKAGES) {
    const pkg = JSON.parse(await readFile(new URL(`node_modules/${name}/package.json`, root), 'utf8')) as { version: string };
    const target = fileURLToPath(bundleUrl(name, pkg.version));
    if (await stat(target).catch(() => undefined)) {
      console.log(`dependency bundles: ${name}@${pkg.version} is up to date`);
      continue;
    }
    const building = `${target}.building-${process.pid}`;
    const started = Date.now();
    // The package's own entry for `import`, as Node resolves it from the project.
    const input = fileURLToPath(import.meta.resolve(name));
    await build({ input, platform: 'node', logLevel: 'warn', output: { file: building, format: 'esm' } });
    await rename(building, target).catch(async (err: unknown) => {
      await rm(building, { force: true });
      throw err;
    });
    console.log(`dependency bundles: built ${name}@${pkg.version} in ${Date.now() - started} ms`);
  }
} catch (err) {
  console.warn(`dependency bundles: not built (${err instanceof Error ? err.message : String(err)}); the packages load as installed`);
}
