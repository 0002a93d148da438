// A typed key-value store with expiry, the kind of module a web app keeps in lib/.
export const DEFAULT_TTL_MS = 60_000;

export type Key = string | number;

export interface Entry<V> {
  value: V;
  expiresAt: number;
}

export enum Mode {
  ReadOnly,
  ReadWrite,
}

export interface Clock {
  now(): number;
}

/** Keeps values until their time-to-live runs out. */
export class TtlStore<V> implements Iterable<[Key, V]> {
  private readonly entries = new Map<Key, Entry<V>>();

  constructor(private readonly clock: Clock, private ttl: number = DEFAULT_TTL_MS) {}

  get(key: Key): V | undefined {
    const entry = this.entries.get(key);
    if (!entry || entry.expiresAt <= this.clock.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: Key, value: V, ttl: number = this.ttl): this {
    this.entries.set(key, { value, expiresAt: this.clock.now() + ttl });
    return this;
  }

  *[Symbol.iterator](): Iterator<[Key, V]> {
    for (const [key, entry] of this.entries) {
      yield [key, entry.value];
    }
  }
}

export abstract class Loader<T> {
  abstract load(key: Key): Promise<T>;
}

export function systemClock(): Clock {
  return { now: () => Date.now() };
}

export const memoize = <A extends unknown[], R>(fn: (...args: A) => R): ((...args: A) => R) => {
  const cache = new Map<string, R>();
  return (...args: A) => {
    const key = JSON.stringify(args);
    if (!cache.has(key)) cache.set(key, fn(...args));
    return cache.get(key) as R;
  };
};

declare module "./globals" {
  interface Window {
    store: TtlStore<unknown>;
  }
}
