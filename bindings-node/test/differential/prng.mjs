// A small seeded PRNG (sfc32, seeded through splitmix32) and the picking helpers the
// generator uses. Same seed, same numbers, on every platform: sequences are reproducible
// from their seed alone.

function splitmix32(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class Rng {
  /** `seed`: any integer (taken modulo 2^32). */
  constructor(seed) {
    const init = splitmix32(Number(seed) >>> 0);
    this.a = init();
    this.b = init();
    this.c = init();
    this.d = init();
    for (let i = 0; i < 12; i++) this.u32();
  }

  /** A uniform 32-bit unsigned integer. */
  u32() {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t;
  }

  /** A float in [0, 1). */
  float() {
    return this.u32() / 4294967296;
  }

  /** An integer in [lo, hi] (inclusive). */
  int(lo, hi) {
    return lo + Math.floor(this.float() * (hi - lo + 1));
  }

  /** `true` with probability `p`. */
  chance(p) {
    return this.float() < p;
  }

  /** One element of a non-empty array. */
  pick(items) {
    return items[Math.floor(this.float() * items.length)];
  }

  /** One key of `{name: weight}` (weights ≥ 0, not all zero), by weight. */
  weighted(table) {
    let total = 0;
    for (const w of Object.values(table)) total += w;
    let x = this.float() * total;
    for (const [k, w] of Object.entries(table)) {
      if (w <= 0) continue;
      x -= w;
      if (x < 0) return k;
    }
    for (const [k, w] of Object.entries(table)) if (w > 0) return k;
    throw new Error("weighted(): every weight is zero");
  }

  /** A random subset (order kept) of `items`, each kept with probability `p`. */
  subset(items, p = 0.5) {
    return items.filter(() => this.chance(p));
  }

  /** A shuffled copy. */
  shuffle(items) {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.float() * (i + 1));
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  /** A child generator, independent of later draws from this one. */
  fork() {
    return new Rng(this.u32());
  }
}
