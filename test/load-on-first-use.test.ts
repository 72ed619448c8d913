import { describe, expect, it } from '@jest/globals';
import { loadOnFirstUse } from '../src/core/load-on-first-use.js';

// The loader of the libraries the gateway imports on first use (core/load-on-first-use.ts).

/** A load the test settles by hand, counting its starts. */
function manualLoad<T>() {
  const load = {
    starts: 0,
    settle: undefined as undefined | { resolve: (value: T) => void; reject: (error: Error) => void },
  };
  const run = () =>
    new Promise<T>((resolve, reject) => {
      load.starts++;
      load.settle = { resolve, reject };
    });
  return { load, run };
}

const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('loadOnFirstUse', () => {
  it('loads once, and gives every caller, at once or later, the same result', async () => {
    const { load, run } = manualLoad<{ name: string }>();
    const get = loadOnFirstUse(run);
    const first = get();
    const second = get();
    await turns();
    expect(load.starts).toBe(1);
    const value = { name: 'library' };
    load.settle!.resolve(value);
    expect(await first).toBe(value);
    expect(await second).toBe(value);
    expect(await get()).toBe(value);
    expect(load.starts).toBe(1);
  });

  it("gives a failed load's error to those waiting on it, and tries again on the next use", async () => {
    const { load, run } = manualLoad<string>();
    const get = loadOnFirstUse(run);
    const waiting = [get(), get()];
    await turns();
    load.settle!.reject(new Error('Cannot find package'));
    for (const result of waiting) await expect(result).rejects.toThrow('Cannot find package');
    const again = get();
    await turns();
    expect(load.starts).toBe(2);
    load.settle!.resolve('loaded');
    expect(await again).toBe('loaded');
  });

  it('runs one load at a time, process-wide: the next starts once the one before has settled, failed or not', async () => {
    const a = manualLoad<string>();
    const b = manualLoad<string>();
    const c = manualLoad<string>();
    const [getA, getB, getC] = [loadOnFirstUse(a.run), loadOnFirstUse(b.run), loadOnFirstUse(c.run)];
    const loadingA = getA();
    const loadingB = getB();
    const loadingC = getC();
    await turns();
    expect([a.load.starts, b.load.starts, c.load.starts]).toEqual([1, 0, 0]);
    a.load.settle!.reject(new Error('a failed'));
    await expect(loadingA).rejects.toThrow('a failed');
    await turns();
    expect([b.load.starts, c.load.starts]).toEqual([1, 0]);
    b.load.settle!.resolve('b');
    expect(await loadingB).toBe('b');
    await turns();
    expect(c.load.starts).toBe(1);
    c.load.settle!.resolve('c');
    expect(await loadingC).toBe('c');
  });

  it('gives a library already loaded at once, while another load is still going', async () => {
    const a = manualLoad<string>();
    const b = manualLoad<string>();
    const [getA, getB] = [loadOnFirstUse(a.run), loadOnFirstUse(b.run)];
    const loadingA = getA();
    await turns();
    a.load.settle!.resolve('a');
    expect(await loadingA).toBe('a');
    const loadingB = getB();
    await turns();
    expect(b.load.starts).toBe(1);
    try {
      let given: string | undefined;
      void getA().then((value) => (given = value));
      await turns(1);
      expect(given).toBe('a');
    } finally {
      b.load.settle!.resolve('b');
      await loadingB;
    }
  });

  it('takes a load that throws at once as a failed load: its callers get the error, the loads after it go on', async () => {
    let attempts = 0;
    const getBroken = loadOnFirstUse<string>(() => {
      attempts++;
      throw new Error('thrown, not rejected');
    });
    const after = manualLoad<string>();
    const getAfter = loadOnFirstUse(after.run);
    const broken = getBroken();
    const loadingAfter = getAfter();
    await expect(broken).rejects.toThrow('thrown, not rejected');
    await turns();
    expect(after.load.starts).toBe(1);
    after.load.settle!.resolve('after');
    expect(await loadingAfter).toBe('after');
    await expect(getBroken()).rejects.toThrow('thrown, not rejected');
    expect(attempts).toBe(2);
  });
});
