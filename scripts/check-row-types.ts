// `npm run db:types`: the row types in src/db/schema.ts (written by hand, so they can say more than the
// database: literal unions, JSON shapes) checked against the database the migrations build. A fresh
// in-memory PGlite is migrated and its information_schema compared with the interfaces of `DB`, read
// with the TypeScript compiler: the same tables, the same columns, nullable exactly where the type
// admits null, a TypeScript type that fits the column's, the values of `col IN (...)` checks equal to
// the literal union, and no column optional on insert that the database requires. Any drift fails.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { sql } from 'kysely';
import ts from 'typescript';

// --root DIR runs against another copy of the project (the tests use it to prove the check fails).
const rootArg = process.argv.indexOf('--root');
const root = rootArg > -1 ? resolve(process.argv[rootArg + 1]!) : resolve(import.meta.dirname, '..');

/** What a column holds, as both sides can say it. */
type Kind = 'string' | 'number' | 'boolean' | 'Date' | 'bytes' | 'string[]' | 'number[]' | 'json';

interface DbColumn {
  kind: Kind;
  pgType: string;
  nullable: boolean;
  hasDefault: boolean;
  allowed?: string[];
}

interface TsColumn {
  /** The kinds of the select type's non-null members; 'json' when it is an object, unknown or any. */
  kinds: Set<Kind | 'other'>;
  nullable: boolean;
  /** String literals of the select type, when every non-null member is one. */
  literals?: string[];
  insertOptional: boolean;
  text: string;
}

const PG_KINDS: Record<string, Kind> = {
  text: 'string',
  varchar: 'string',
  bpchar: 'string',
  citext: 'string',
  uuid: 'string',
  xid8: 'string',
  inet: 'string',
  int2: 'number',
  int4: 'number',
  // int8 is parsed as a number by both drivers (src/db/database.ts).
  int8: 'number',
  float4: 'number',
  float8: 'number',
  bool: 'boolean',
  timestamptz: 'Date',
  timestamp: 'Date',
  date: 'Date',
  bytea: 'bytes',
  _text: 'string[]',
  _uuid: 'string[]',
  _varchar: 'string[]',
  // Parsed as numbers by both drivers too.
  _int8: 'number[]',
  json: 'json',
  jsonb: 'json',
};

async function readDatabase(): Promise<Map<string, Map<string, DbColumn>>> {
  const { openDatabase } = (await import(pathToFileURL(resolve(root, 'src/db/database.ts')).href)) as typeof import('../src/db/database.ts');
  const { migrateToLatest } = (await import(pathToFileURL(resolve(root, 'src/db/migrate.ts')).href)) as typeof import('../src/db/migrate.ts');
  const database = await openDatabase({ databaseUrl: 'pglite://memory', dataDir: '', poolMax: 1 });
  try {
    await migrateToLatest(database.db);
    const { rows } = await sql<{ table_name: string; column_name: string; udt_name: string; is_nullable: string; column_default: string | null; is_identity: string }>`
      select c.table_name, c.column_name, c.udt_name, c.is_nullable, c.column_default, c.is_identity
      from information_schema.columns c
      join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
      where c.table_schema = 'public' and t.table_type = 'BASE TABLE' and c.table_name not like 'kysely\\_%'
      order by c.table_name, c.ordinal_position
    `.execute(database.db);
    const { rows: checks } = await sql<{ table_name: string; definition: string }>`
      select rel.relname as table_name, pg_get_constraintdef(con.oid) as definition
      from pg_constraint con join pg_class rel on rel.oid = con.conrelid join pg_namespace n on n.oid = rel.relnamespace
      where n.nspname = 'public' and con.contype = 'c'
    `.execute(database.db);
    const tables = new Map<string, Map<string, DbColumn>>();
    for (const row of rows) {
      const columns = tables.get(row.table_name) ?? new Map<string, DbColumn>();
      tables.set(row.table_name, columns);
      columns.set(row.column_name, {
        kind: PG_KINDS[row.udt_name] ?? (`unmapped ${row.udt_name}` as Kind),
        pgType: row.udt_name,
        nullable: row.is_nullable === 'YES',
        hasDefault: row.column_default !== null || row.is_identity === 'YES',
      });
    }
    // `col IN ('a', 'b')` comes back as CHECK ((col = ANY (ARRAY['a'::text, 'b'::text]))).
    for (const { table_name, definition } of checks) {
      const match = /^CHECK \(\((\w+) = ANY \(ARRAY\[(.*)\]\)\)\)$/.exec(definition);
      const column = match && tables.get(table_name)?.get(match[1]!);
      if (column) column.allowed = [...match[2]!.matchAll(/'((?:[^']|'')*)'::\w+/g)].map((m) => m[1]!.replaceAll("''", "'")).sort();
    }
    return tables;
  } finally {
    await database.close();
  }
}

function readTypes(): Map<string, Map<string, TsColumn>> {
  const file = resolve(root, 'src/db/schema.ts');
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowImportingTsExtensions: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2024,
    types: [],
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file)!;
  const errors = ts.getPreEmitDiagnostics(program, source);
  if (errors.length > 0) throw new Error(`src/db/schema.ts does not compile: ${ts.flattenDiagnosticMessageText(errors[0]!.messageText, '\n')}`);
  const db = checker.getExportsOfModule(checker.getSymbolAtLocation(source)!).find((s) => s.name === 'DB');
  if (!db) throw new Error('src/db/schema.ts exports no DB interface');
  const dbType = checker.getDeclaredTypeOfSymbol(db);

  const member = (type: ts.Type, name: string) => {
    const symbol = type.getProperty(name);
    return symbol && checker.getTypeOfSymbol(symbol);
  };
  const parts = (type: ts.Type) => (type.isUnion() ? type.types : [type]);
  const kindOf = (type: ts.Type): Kind | 'other' => {
    const f = type.flags;
    if (f & (ts.TypeFlags.String | ts.TypeFlags.StringLiteral)) return 'string';
    if (f & (ts.TypeFlags.Number | ts.TypeFlags.NumberLiteral)) return 'number';
    if (f & (ts.TypeFlags.Boolean | ts.TypeFlags.BooleanLiteral)) return 'boolean';
    if (f & (ts.TypeFlags.Unknown | ts.TypeFlags.Any)) return 'json';
    const name = type.getSymbol()?.name;
    if (name === 'Date') return 'Date';
    if (name === 'Uint8Array' || name === 'Buffer') return 'bytes';
    if (checker.isArrayType(type)) {
      const [element] = checker.getTypeArguments(type as ts.TypeReference);
      const of = element && kindOf(element);
      return of === 'string' ? 'string[]' : of === 'number' ? 'number[]' : 'json';
    }
    if (f & ts.TypeFlags.Object) return 'json';
    return 'other';
  };

  const tables = new Map<string, Map<string, TsColumn>>();
  for (const tableSymbol of dbType.getProperties()) {
    const tableType = checker.getTypeOfSymbol(tableSymbol);
    const columns = new Map<string, TsColumn>();
    tables.set(tableSymbol.name, columns);
    for (const columnSymbol of tableType.getProperties()) {
      const declared = checker.getTypeOfSymbol(columnSymbol);
      // ColumnType<S, I, U> (and Generated<S>) is { __select__: S; __insert__: I; __update__: U }.
      const select = member(declared, '__select__') ?? declared;
      const insert = member(declared, '__insert__') ?? declared;
      const nonNull = parts(select).filter((t) => !(t.flags & ts.TypeFlags.Null));
      const literals = nonNull.every((t) => t.isStringLiteral()) ? nonNull.map((t) => (t as ts.StringLiteralType).value).sort() : undefined;
      columns.set(columnSymbol.name, {
        kinds: new Set(nonNull.map(kindOf)),
        nullable: nonNull.length < parts(select).length,
        ...(literals && literals.length > 0 ? { literals } : {}),
        insertOptional: parts(insert).some((t) => t.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Null)),
        text: checker.typeToString(select),
      });
    }
  }
  return tables;
}

const [database, types] = [await readDatabase(), readTypes()];
const problems: string[] = [];
for (const table of database.keys()) if (!types.has(table)) problems.push(`table ${table} is in the database but not in DB`);
for (const [table, tsColumns] of types) {
  const dbColumns = database.get(table);
  if (!dbColumns) {
    problems.push(`table ${table} is in DB but not in the database`);
    continue;
  }
  for (const column of dbColumns.keys()) if (!tsColumns.has(column)) problems.push(`${table}.${column} is in the database but not in schema.ts`);
  for (const [column, t] of tsColumns) {
    const d = dbColumns.get(column);
    const at = `${table}.${column}`;
    if (!d) {
      problems.push(`${at} is in schema.ts but not in the database`);
      continue;
    }
    if (d.nullable !== t.nullable) {
      problems.push(`${at}: the column is ${d.nullable ? 'nullable' : 'NOT NULL'} but the type ${t.text} ${t.nullable ? 'admits' : 'does not admit'} null`);
    }
    // A JSON column may hold whatever the type says; every other column needs a matching kind.
    if (d.kind !== 'json' && [...t.kinds].some((k) => k !== d.kind)) {
      problems.push(`${at}: a ${d.pgType} column does not hold ${t.text}`);
    }
    if (d.allowed && t.literals && d.allowed.join() !== t.literals.join()) {
      problems.push(`${at}: the database allows ${d.allowed.join(', ')} but the type says ${t.literals.join(', ')}`);
    }
    if (t.insertOptional && !d.nullable && !d.hasDefault) {
      problems.push(`${at}: optional on insert in schema.ts, but NOT NULL without a default in the database`);
    }
  }
}

if (problems.length > 0) {
  for (const p of problems) console.error(`src/db/schema.ts drifted from the migrations: ${p}`);
  process.exit(1);
}
console.log(`src/db/schema.ts matches the migrated database (${types.size} tables)`);
