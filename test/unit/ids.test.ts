import { expect } from 'chai';
import { TENANT_ID, newId, newUuid } from '../../src/shared/ids.ts';

describe('ids', () => {
  it('grow strictly within a millisecond and across the random pool refills, as UUIDv7', () => {
    // 100,000 ids: hundreds of them share each millisecond, and the 4 KiB pool is refilled 390 times.
    const ids = Array.from({ length: 100_000 }, () => newUuid());
    for (let i = 1; i < ids.length; i++) if (!(ids[i]! > ids[i - 1]!)) expect.fail(`${ids[i]} does not follow ${ids[i - 1]}`);
    expect(new Set(ids).size).to.equal(ids.length);
    const perMs = new Map<string, number>();
    for (const id of ids) perMs.set(id.slice(0, 13), (perMs.get(id.slice(0, 13)) ?? 0) + 1);
    expect(Math.max(...perMs.values()), 'ids made in one millisecond').to.be.above(1);
    expect(TENANT_ID.test(newId('tenant'))).to.equal(true);
    const stamp = Number.parseInt(ids.at(-1)!.slice(0, 8) + ids.at(-1)!.slice(9, 13), 16);
    expect(Math.abs(stamp - Date.now())).to.be.below(1000);
  });
});
