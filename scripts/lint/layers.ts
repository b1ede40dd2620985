// The layering rules of src/ (docs/architecture.md, Layers), as ESLint rules. Files are classified by path alone:
// `src/<feature>/<name>.<role>.ts`, role one of repository, service, handlers. Import specifiers are
// resolved against the importing file, so `.ts` specifiers need no resolver plugin.
import { dirname, relative, resolve, sep } from 'node:path';
import type { Rule } from 'eslint';

export interface LayerOptions {
  /** Absolute path of src/. */
  srcDir: string;
  /** Folders any feature may import anything from (shared code, the database, the event feed). */
  shared: string[];
  /**
   * Known imports of another feature's repository, `importer -> imported` as paths under src/. Each is
   * debt: the importing feature should call the other feature's service. Remove entries, never add.
   */
  allowedRepositoryImports: string[];
}

/**
 * The folders of src/ and, for each, the folders it may import from: the dependency graph between
 * features, written down. It has no circle (checked when the rule starts); a folder missing from it is
 * reported, so a new feature says where it sits.
 */
export type FeatureGraph = Record<string, readonly string[]>;

/** A circle of the graph as `a -> b -> a`, or undefined when it has none. */
export function circleOf(graph: FeatureGraph): string | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node].join(' -> ');
    state.set(node, 'open');
    path.push(node);
    for (const next of graph[node] ?? []) {
      const found = visit(next);
      if (found) return found;
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of Object.keys(graph).sort()) {
    const found = visit(node);
    if (found) return found;
  }
  return undefined;
}

type Role = 'repository' | 'service' | 'handlers' | 'other';

interface Place {
  /** Path under src/ with forward slashes. */
  path: string;
  /** First folder under src/, '' for files at its root (app.ts, server.ts). */
  feature: string;
  role: Role;
}

function place(srcDir: string, file: string): Place | undefined {
  const path = relative(srcDir, file).split(sep).join('/');
  if (path.startsWith('..') || path === '') return undefined;
  const feature = path.includes('/') ? path.slice(0, path.indexOf('/')) : '';
  const role = (/\.(repository|service|handlers)\.ts$/.exec(path)?.[1] ?? 'other') as Role;
  return { path, feature, role };
}

const mayQuery = (p: Place) => p.role === 'repository' || p.feature === 'db';

function optionsOf(context: Rule.RuleContext): LayerOptions {
  return context.options[0] as LayerOptions;
}

const importsRule: Rule.RuleModule = {
  meta: {
    type: 'problem',
    docs: { description: 'Kysely only in repositories and src/db; no http/ from services, repositories or shared/; features meet through services' },
    schema: [{ type: 'object' }],
    messages: {
      kysely: "'{{spec}}' is imported outside a repository: queries live in *.repository.ts (or src/db/).",
      http: "{{role}} imports '{{spec}}': services, repositories and shared/ know no HTTP (use src/shared/).",
      handlers: "'{{spec}}' is another feature's handlers: only app.ts wires handlers.",
      repository: "'{{spec}}' is another feature's repository: call its service instead.",
    },
  },
  create(context) {
    const options = optionsOf(context);
    const importer = place(options.srcDir, context.filename);
    if (!importer) return {};
    const allowed = new Set(options.allowedRepositoryImports);

    const check = (node: Rule.Node, source: unknown) => {
      if (typeof source !== 'string') return;
      if (source === 'kysely' || source.startsWith('kysely/')) {
        if (!mayQuery(importer)) context.report({ node, messageId: 'kysely', data: { spec: source } });
        return;
      }
      if (!source.startsWith('.')) return;
      const target = place(options.srcDir, resolve(dirname(context.filename), source));
      if (!target || target.feature === importer.feature) return;
      if (target.feature === 'http' && (importer.role === 'service' || importer.role === 'repository' || importer.feature === 'shared')) {
        const role = importer.feature === 'shared' ? 'shared/' : `a ${importer.role}`;
        context.report({ node, messageId: 'http', data: { spec: source, role } });
        return;
      }
      // Files at the root of src/ (app.ts, server.ts) wire the features together.
      if (importer.feature === '' || options.shared.includes(target.feature)) return;
      if (target.role === 'handlers') context.report({ node, messageId: 'handlers', data: { spec: source } });
      if (target.role === 'repository' && !allowed.has(`${importer.path} -> ${target.path}`)) {
        context.report({ node, messageId: 'repository', data: { spec: source } });
      }
    };

    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => check(node, node.source?.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => check(node, node.source.type === 'Literal' ? node.source.value : undefined),
    };
  },
};

// The entry points of Kysely's query builders (and raw compiled queries). A service holding a
// transaction can call them without importing kysely, so the import rule alone does not catch them.
const QUERY_METHODS = new Set(['selectFrom', 'selectNoFrom', 'insertInto', 'replaceInto', 'updateTable', 'deleteFrom', 'mergeInto', 'executeQuery']);

const queriesRule: Rule.RuleModule = {
  meta: {
    type: 'problem',
    docs: { description: 'Query builders only in repositories and src/db' },
    schema: [{ type: 'object' }],
    messages: { query: '.{{method}}() outside a repository: queries live in *.repository.ts (or src/db/).' },
  },
  create(context) {
    const importer = place(optionsOf(context).srcDir, context.filename);
    if (!importer || mayQuery(importer)) return {};
    return {
      CallExpression(node) {
        const callee = node.callee;
        if (callee.type !== 'MemberExpression' || callee.property.type !== 'Identifier') return;
        if (QUERY_METHODS.has(callee.property.name)) {
          context.report({ node: callee.property, messageId: 'query', data: { method: callee.property.name } });
        }
      },
    };
  },
};

const featuresRule: Rule.RuleModule = {
  meta: {
    type: 'problem',
    docs: { description: 'Imports between folders of src/ follow the written-down graph, which has no circle' },
    schema: [{ type: 'object' }],
    messages: {
      unknown: "src/{{feature}}/ is not in the feature graph (features in eslint.config.js): add it with the folders it imports.",
      forbidden:
        "src/{{importer}}/ may not import src/{{target}}/ ('{{spec}}'): the feature graph (eslint.config.js) does not allow it. Add the edge only if it makes no circle; otherwise pass what is needed in (see docs/architecture.md).",
    },
  },
  create(context) {
    const { srcDir, features } = context.options[0] as { srcDir: string; features: FeatureGraph };
    const circle = circleOf(features);
    // A circle is a broken configuration, not one file's finding: every file would carry it.
    if (circle) throw new Error(`layers/features: the feature graph in eslint.config.js has a circle: ${circle}`);
    const importer = place(srcDir, context.filename);
    if (!importer || importer.feature === '') return {};
    const allowed = features[importer.feature];
    let reportedUnknown = false;

    const check = (node: Rule.Node, source: unknown) => {
      if (typeof source !== 'string' || !source.startsWith('.')) return;
      const target = place(srcDir, resolve(dirname(context.filename), source));
      if (!target || target.feature === importer.feature || target.feature === '' || !target.path.includes('/')) return;
      if (!allowed) {
        if (!reportedUnknown) context.report({ node, messageId: 'unknown', data: { feature: importer.feature } });
        reportedUnknown = true;
        return;
      }
      if (!allowed.includes(target.feature)) {
        context.report({ node, messageId: 'forbidden', data: { importer: importer.feature, target: target.feature, spec: source } });
      }
    };

    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => check(node, node.source?.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => check(node, node.source.type === 'Literal' ? node.source.value : undefined),
    };
  },
};

export const layers = {
  meta: { name: 'layers' },
  rules: { imports: importsRule, 'no-query-outside-repository': queriesRule, features: featuresRule },
};
