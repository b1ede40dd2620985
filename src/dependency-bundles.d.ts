// The types of src/dependency-bundles.js (JavaScript: src/main.js imports it before any TypeScript loads).
export declare const BUNDLED_PACKAGES: string[];
export declare const BUNDLES_DIRECTORY: URL;
export declare function bundleUrl(name: string, version: string, directory?: URL): URL;
export declare function useDependencyBundles(directory?: URL): string[];
