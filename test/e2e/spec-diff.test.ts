import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import request from 'supertest';
import { stringify } from 'yaml';
import { loadContract } from '../../src/http/contract.ts';
import { getHarness } from '../support/harness.ts';

// npm run spec:diff on copies of the contract, changed as a pull request would change it.
describe('npm run spec:diff', function () {
  this.timeout(60_000);
  const dir = mkdtempSync(join(tmpdir(), 'chat-spec-diff-'));
  const original = loadContract().document;
  after(() => rmSync(dir, { recursive: true, force: true }));

  const daysFromNow = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
  let n = 0;
  function diff(change: (doc: Record<string, any>) => void, base: (doc: Record<string, any>) => void = () => undefined) {
    const before = structuredClone(original);
    base(before);
    const after = structuredClone(before);
    change(after);
    const [b, a] = [join(dir, `before-${++n}.yaml`), join(dir, `after-${n}.yaml`)];
    writeFileSync(b, stringify(before));
    writeFileSync(a, stringify(after));
    const run = spawnSync(process.execPath, ['scripts/spec-diff.ts', '--before', b, '--after', a], { encoding: 'utf8' });
    return { status: run.status, out: run.stdout + run.stderr };
  }
  const schemas = (doc: Record<string, any>) => doc.components.schemas;

  it('fails on a removed response field, naming each operation that answers it', () => {
    const { status, out } = diff((doc) => {
      delete schemas(doc).TokenPair.properties.expires_in;
      schemas(doc).TokenPair.required = schemas(doc).TokenPair.required.filter((f: string) => f !== 'expires_in');
    });
    expect(status, out).to.equal(1);
    // Made once in TokenPair: one entry, with every operation it reaches.
    expect(out).to.match(/\n {2}breaking +\[Removed\] property `expires_in` +at components\.schemas\.TokenPair\.properties\.expires_in\n +in 4 operations: .*POST \/v1\/auth\/login \(login\), POST \/v1\/auth\/refresh \(refreshToken\)/);
    expect(out.match(/property `expires_in`/g)).to.have.length(1);
    expect(out).not.to.match(/^POST \/v1\/auth\/login/m);
    expect(out).to.match(/FAIL \d+ breaking change\(s\) under \/v1 not announced/);
  });

  it('fails on a response field that may now be null, and passes a request field that may', () => {
    const widened = diff((doc) => {
      schemas(doc).TokenPair.properties.token_type = { ...schemas(doc).TokenPair.properties.token_type, type: ['string', 'null'] };
    });
    expect(widened.status, widened.out).to.equal(1);
    expect(widened.out).to.match(/\n {2}breaking +\[Widened\] `TokenPair\.token_type` may now be null in a response +at components\.schemas\.TokenPair\.properties\.token_type\.type\n +in 4 operations: .*POST \/v1\/auth\/login \(login\)/);
    const request = diff((doc) => {
      schemas(doc).LoginRequest.properties.email = { ...schemas(doc).LoginRequest.properties.email, type: ['string', 'null'] };
    });
    expect(request.status, request.out).to.equal(0);
    expect(request.out).to.contain(' 0 breaking');
    expect(request.out).to.not.contain('may now be null in a response');
  });

  it("passes a changed response example, even a value under a field named 'type'", () => {
    const { status, out } = diff(
      (doc) => (doc.paths['/v1/messages/{conversation_id}'].get.responses['200'].content['application/json'].example.data[0].type = 'system'),
      (doc) => (doc.paths['/v1/messages/{conversation_id}'].get.responses['200'].content['application/json'].example.data[0].type = 'text'),
    );
    expect(status, out).to.equal(0);
    expect(out).to.contain(' 0 breaking');
  });

  it('passes a request pattern that only gained an alternative, and fails one that was rewritten narrower', () => {
    const pattern = () => schemas(original).WorkflowCondition.properties.field.pattern as string;
    const grown = diff((doc) => {
      schemas(doc).WorkflowCondition.properties.field.pattern = pattern().replace('|assigned', '|assigned|snoozed');
    });
    expect(grown.status, grown.out).to.equal(0);
    expect(grown.out).to.contain(' 0 breaking');
    const narrowed = diff((doc) => {
      schemas(doc).WorkflowCondition.properties.field.pattern = pattern().replace('|assigned', '');
    });
    expect(narrowed.status, narrowed.out).to.equal(1);
    // An alternative added inside a lookahead is no widening: it stays breaking.
    const lookahead = diff(
      (doc) => {
        schemas(doc).WorkflowCondition.properties.field.pattern = '^(?!x|y)[a-z.]+$';
      },
      (doc) => {
        schemas(doc).WorkflowCondition.properties.field.pattern = '^(?!x)[a-z.]+$';
      },
    );
    expect(lookahead.status, lookahead.out).to.equal(1);
  });

  it('fails on a new required request field', () => {
    const { status, out } = diff((doc) => {
      schemas(doc).LoginRequest.properties.otp = { type: 'string' };
      schemas(doc).LoginRequest.required.push('otp');
    });
    expect(status, out).to.equal(1);
    expect(out).to.match(/POST \/v1\/auth\/login \(login\)\n(.*\n)*? {2}breaking +\[Added\] required status to `otp`/);
  });

  it('passes a new event type and a new event in the union (open sets), and fails a new value of a closed response enum', () => {
    const grown = diff((doc) => {
      schemas(doc).EventType.enum.splice(1, 0, 'conversation.snoozed');
      schemas(doc).ApiKeyScope.enum.splice(2, 0, 'snoozes:read');
      schemas(doc).Event.oneOf.splice(1, 0, { $ref: '#/components/schemas/WebhookTestEvent' });
    });
    expect(grown.status, grown.out).to.equal(0);
    expect(grown.out).to.contain('(an open set grew: x-extensible)');
    expect(grown.out).not.to.match(/ breaking +\[/);

    const closed = diff((doc) => {
      schemas(doc).ConversationStatus.enum.splice(1, 0, 'snoozed');
    });
    expect(closed.status, closed.out).to.equal(1);
    expect(closed.out).to.match(/\n {2}breaking +\[Widened\] .* may now be `snoozed` \(a closed enum: no x-extensible\) +at components\.schemas\.ConversationStatus\.enum\.\d+\n +in \d+ operations: .*GET \/v1\/conversations \(listConversations\)/);
  });

  it('fails on a removed operation', () => {
    const { status, out } = diff((doc) => {
      delete doc.paths['/v1/auth/logout'];
    });
    expect(status, out).to.equal(1);
    expect(out).to.match(/POST \/v1\/auth\/logout \(logout\)\n {2}breaking +\[Removed\] operation POST \/v1\/auth\/logout/);
  });

  it('passes an added optional request field, reported as non-breaking', () => {
    const { status, out } = diff((doc) => {
      schemas(doc).LoginRequest.properties.remember_me = { type: 'boolean', default: false };
    });
    expect(status, out).to.equal(0);
    expect(out).to.match(/POST \/v1\/auth\/login \(login\)\n {2}non-breaking +\[Added\] property `remember_me`/);
    expect(out).to.contain('0 breaking');
    expect(out).not.to.contain('FAIL');
  });

  it('passes a deprecation with six months notice; fails one with less, or without dates', () => {
    const deprecate = (sunsetDays: number | undefined) => (doc: Record<string, any>) => {
      Object.assign(doc.paths['/v1/auth/logout'].post, { deprecated: true, ...(sunsetDays === undefined ? {} : { 'x-deprecated-at': daysFromNow(0), 'x-sunset': daysFromNow(sunsetDays) }) });
    };
    const ok = diff(deprecate(200));
    expect(ok.status, ok.out).to.equal(0);
    expect(ok.out).to.match(/deprecated +\[Added\] deprecated status/);
    const soon = diff(deprecate(30));
    expect(soon.status, soon.out).to.equal(1);
    expect(soon.out).to.match(/FAIL POST \/v1\/auth\/logout \(logout\): newly deprecated with x-sunset .*less than six months ahead/);
    const undated = diff(deprecate(undefined));
    expect(undated.status, undated.out).to.equal(1);
    expect(undated.out).to.contain('newly deprecated without x-deprecated-at and x-sunset');
  });

  it('passes removing an operation whose announced sunset has passed, and says why', () => {
    const { status, out } = diff(
      (doc) => {
        delete doc.paths['/v1/auth/logout'];
      },
      (doc) => Object.assign(doc.paths['/v1/auth/logout'].post, { deprecated: true, 'x-deprecated-at': daysFromNow(-200), 'x-sunset': daysFromNow(-1) }),
    );
    expect(status, out).to.equal(0);
    expect(out).to.match(/POST \/v1\/auth\/logout \(logout\) {2}\[intended: deprecated, sunset .* passed\]/);
  });

  describe('on the fixture pair (test/fixtures/spec-diff)', () => {
    const pair = (...extra: string[]) => {
      const run = spawnSync(process.execPath, ['scripts/spec-diff.ts', '--before', 'test/fixtures/spec-diff/before.yaml', '--after', 'test/fixtures/spec-diff/after.yaml', ...extra], { encoding: 'utf8' });
      return { status: run.status, out: run.stdout + run.stderr };
    };
    const THINGS = 'GET /v1/things (listThings), GET /v1/things/{id} (getThing), PATCH /v1/things/{id} (updateThing), POST /v1/things (createThing)';

    it('tells a change made in a shared schema once, with the four operations it reaches, and flags widened responses', () => {
      const { status, out } = pair();
      expect(status, out).to.equal(1);
      const shared = out.slice(out.indexOf('shared changes'), out.indexOf('\nGET /v1/stats'));
      expect(shared.split('\n')).to.deep.equal([
        'shared changes (made once, reaching several operations):',
        '  breaking     [Widened] `Status` in a response may now be `snoozed` (a closed enum: no x-extensible)  at components.schemas.Status.enum.2',
        `               in 4 operations: ${THINGS}`,
        '  breaking     [Widened] `Thing.label` may now be null in a response  at components.schemas.Thing.properties.label.type',
        `               in 4 operations: ${THINGS}`,
        '  non-breaking [Removed] property `note`  at components.schemas.Thing.properties.note',
        `               in 4 operations: ${THINGS}`,
        '',
      ]);
      // What one operation changed on its own stays under it; a request that accepts more is compatible.
      expect(out).to.contain('GET /v1/stats (getStats)\n  non-breaking [Added] property `closed`');
      expect(out).to.match(/POST \/v1\/things \(createThing\)\n(.*\n)* {2}non-breaking \[Replaced\] type definition of `label` in Request Body .*\(a request type widened/);
      expect(out).not.to.match(/^GET \/v1\/things \(listThings\)$/m);
      expect(out).to.contain('5 operations changed, 6 entries: 2 breaking, 0 deprecated, 4 non-breaking, 0 annotation');
      expect(out).to.contain('FAIL 2 breaking change(s) under /v1 not announced');
    });

    it('--format markdown writes the same entries for a pull request comment', () => {
      const { status, out } = pair('--format', 'markdown');
      expect(status, out).to.equal(1);
      const lines = out.split('\n');
      expect(lines.slice(0, 8)).to.deep.equal([
        '### Contract changes',
        '',
        'test/fixtures/spec-diff/before.yaml -> test/fixtures/spec-diff/after.yaml',
        '',
        '**5 operations changed, 6 entries: 2 breaking, 0 deprecated, 4 non-breaking, 0 annotation**',
        '',
        '> [!CAUTION]',
        '> 2 breaking change(s) under /v1 not announced: deprecate first (deprecated: true, x-deprecated-at, x-sunset six months ahead), break after the sunset',
      ]);
      const operations = '4: `GET /v1/things` (listThings)<br>`GET /v1/things/{id}` (getThing)<br>`PATCH /v1/things/{id}` (updateThing)<br>`POST /v1/things` (createThing)';
      expect(lines).to.include('| | Change | Made at | Operations |');
      expect(lines).to.include(`| **breaking** | [Widened] \`Thing.label\` may now be null in a response | \`components.schemas.Thing.properties.label.type\` | ${operations} |`);
      expect(lines.filter((l) => l.startsWith('| **'))).to.have.length(6);
      expect(lines).to.include('`GET /v1/stats` (getStats)');
      expect(out).not.to.contain('FAIL');
      expect(pair('--format', 'html').out).to.contain('--format is text or markdown, not html');
    });
  });

  it('compares the working tree with a git ref by default (no change here: the same file)', () => {
    const run = spawnSync(process.execPath, ['scripts/spec-diff.ts', 'HEAD'], { encoding: 'utf8' });
    expect(run.stdout).to.match(/contract changes: openapi\/chat\.yaml at \w+ \(given\)/);
  });
});

describe('a deprecated operation', () => {
  it('answers with Deprecation and Sunset headers from its x-deprecated-at and x-sunset', async () => {
    const document = structuredClone(loadContract().document);
    Object.assign(document.paths['/health'].get, { deprecated: true, 'x-deprecated-at': '2026-11-22', 'x-sunset': '2027-06-01' });
    const app = (await getHarness()).appWith({ contract: loadContract(document) });
    const res = await request(app).get('/api/health').expect(200);
    expect(res.headers.deprecation).to.equal(`@${Date.UTC(2026, 10, 22) / 1000}`);
    expect(res.headers.sunset).to.equal('Tue, 01 Jun 2027 00:00:00 GMT');
    const plain = await request((await getHarness()).app).get('/api/health').expect(200);
    expect(plain.headers).not.to.have.property('deprecation');
  });

  it('must say when it was deprecated and when it goes, as dates, or the contract does not load', () => {
    const marked = (marks: Record<string, unknown>) => {
      const document = structuredClone(loadContract().document);
      Object.assign(document.paths['/health'].get, marks);
      return () => loadContract(document);
    };
    expect(marked({ deprecated: true })).to.throw(/GET \/health: a deprecated operation needs x-deprecated-at as a date/);
    expect(marked({ deprecated: true, 'x-deprecated-at': '2026-11-22', 'x-sunset': 'soon' })).to.throw(/x-sunset as a date/);
    expect(marked({ 'x-sunset': '2027-06-01' })).to.throw(/belong to an operation with deprecated: true/);
  });
});
