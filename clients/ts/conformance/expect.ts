import { isDeepStrictEqual } from "node:util";

import type { Value, ValueMap } from "./scenario.js";

function isMap(v: unknown): v is ValueMap {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Hands out the keys of a step's `expect` map, collects mismatches, and reports the keys
 * that no check consumed, so that an expectation this runner does not understand fails.
 */
export class Expectation {
  private readonly used = new Set<string>();
  readonly problems: string[] = [];

  constructor(private readonly m: ValueMap = {}) {}

  take(key: string): Value | undefined {
    if (!Object.hasOwn(this.m, key)) {
      return undefined;
    }
    this.used.add(key);
    return this.m[key];
  }

  fail(problem: string): void {
    this.problems.push(problem);
  }

  /** The expectation nested under key, or undefined when the key is absent. */
  sub(key: string): Expectation | undefined {
    const v = this.take(key);
    if (v === undefined) {
      return undefined;
    }
    if (!isMap(v)) {
      this.fail(`${key}: expected a map in the scenario, found ${JSON.stringify(v)}`);
      return undefined;
    }
    return new Expectation(v);
  }

  /** Moves a nested expectation's problems, prefixed, into this one. */
  merge(prefix: string, nested: Expectation): void {
    const err = nested.error();
    if (err) {
      this.problems.push(`${prefix}: ${err}`);
    }
  }

  /** Every mismatch and every unchecked key, as one message; undefined when all is well. */
  error(): string | undefined {
    const unknown = Object.keys(this.m).filter((k) => !this.used.has(k)).sort();
    const problems = [...this.problems];
    if (unknown.length > 0) {
      problems.push(`unsupported expectation key(s) ${unknown.join(", ")}`);
    }
    return problems.length > 0 ? problems.join("; ") : undefined;
  }

  checkString(key: string, got: string): void {
    const want = this.take(key);
    if (want !== undefined && want !== got) {
      this.fail(`${key}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
    }
  }

  /** Compares an enum's short name (WAITING) with the value's name in the generated enum. */
  checkEnum(key: string, enumObject: Record<number, string>, got: number): void {
    const want = this.take(key);
    const gotName = enumObject[got] ?? String(got);
    if (want !== undefined && want !== gotName) {
      this.fail(`${key}: expected ${JSON.stringify(want)}, got ${gotName}`);
    }
  }

  checkInt(key: string, got: bigint | number): void {
    const want = this.take(key);
    if (want !== undefined && !(typeof want === "number" && Number.isInteger(want) && BigInt(want) === BigInt(got))) {
      this.fail(`${key}: expected ${JSON.stringify(want)}, got ${got}`);
    }
  }

  checkBool(key: string, got: boolean): void {
    const want = this.take(key);
    if (want !== undefined && want !== got) {
      this.fail(`${key}: expected ${JSON.stringify(want)}, got ${got}`);
    }
  }

  /** Compares a list of strings exactly, in order. */
  checkStrings(key: string, got: readonly string[]): void {
    const want = this.take(key);
    if (want === undefined) {
      return;
    }
    const w = stringList(want);
    if (!w || w.length !== got.length || w.some((s, i) => s !== got[i])) {
      this.fail(`${key}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
    }
  }

  /** Matches got against the expected map as a subset (see subsetMismatches). */
  checkSubset(key: string, got: unknown): void {
    const want = this.take(key);
    if (want === undefined) {
      return;
    }
    if (!isMap(want)) {
      this.fail(`${key}: expected a map in the scenario, found ${JSON.stringify(want)}`);
      return;
    }
    for (const problem of subsetMismatches(want, got, key)) {
      this.fail(problem);
    }
  }

  /** Checks that every expected string is among got. */
  checkContains(key: string, got: readonly string[]): void {
    const want = this.take(key);
    if (want === undefined) {
      return;
    }
    const w = stringList(want);
    if (!w) {
      this.fail(`${key}: expected a list of strings in the scenario, found ${JSON.stringify(want)}`);
      return;
    }
    const present = new Set(got);
    const missing = w.filter((s) => !present.has(s));
    if (missing.length > 0) {
      this.fail(`${key}: missing ${JSON.stringify(missing)} among ${got.length} values`);
    }
  }
}

/**
 * Where got falls short of want, read as a subset: each key want gives must be in got,
 * compared recursively when both are maps; anything else (lists, strings, numbers, null)
 * must be equal. Keys of got that want does not name are ignored.
 */
export function subsetMismatches(want: Value, got: unknown, path: string): string[] {
  if (isMap(want)) {
    if (!isMap(got)) {
      return [`${path}: expected a map with ${JSON.stringify(Object.keys(want))}, got ${JSON.stringify(got)}`];
    }
    return Object.entries(want).flatMap(([key, w]) =>
      Object.hasOwn(got, key) ? subsetMismatches(w, got[key], `${path}.${key}`) : [`${path}.${key}: missing`],
    );
  }
  return isDeepStrictEqual(want, got) ? [] : [`${path}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`];
}

function stringList(v: Value): string[] | undefined {
  return Array.isArray(v) && v.every((s) => typeof s === "string") ? (v as string[]) : undefined;
}
