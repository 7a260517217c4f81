/**
 * A set of tensor names that can hold millions: open addressing over FNV-1a hashes in typed
 * arrays. A Map of a million fresh name strings took four times as long and more memory (it
 * hashes each string and keeps an entry object's worth per name).
 */
export class NameIndex {
  private slots = new Int32Array(1024).fill(-1);
  private hashes = new Int32Array(512);

  /** `names` is the index's own list: `add` appends to it. */
  constructor(readonly names: string[] = []) {
    for (let i = 0; i < names.length; i++) {
      if (this.find(names[i]) < 0) this.insert(names[i], i);
    }
  }

  /** The position of `name` in `names` (its first), or -1. */
  find(name: string): number {
    const h = hash(name);
    const mask = this.slots.length - 1;
    for (let q = h & mask, j = this.slots[q]; j >= 0; q = (q + 1) & mask, j = this.slots[q]) {
      if (this.hashes[j] === h && this.names[j] === name) return j;
    }
    return -1;
  }

  /** Appends `name`, which `find` did not find, to `names`. */
  add(name: string): void {
    this.names.push(name);
    this.insert(name, this.names.length - 1);
  }

  private insert(name: string, at: number): void {
    if (2 * (at + 1) > this.slots.length) this.grow(at);
    if (at >= this.hashes.length) {
      const more = new Int32Array(Math.max(2 * this.hashes.length, at + 1));
      more.set(this.hashes);
      this.hashes = more;
    }
    const h = hash(name);
    this.hashes[at] = h;
    const mask = this.slots.length - 1;
    let q = h & mask;
    while (this.slots[q] >= 0) q = (q + 1) & mask;
    this.slots[q] = at;
  }

  /** Doubles the table, re-placing the entries before `at` (the only ones placed). */
  private grow(at: number): void {
    const slots = new Int32Array(2 * this.slots.length).fill(-1);
    const mask = slots.length - 1;
    for (let q = 0; q < this.slots.length; q++) {
      const j = this.slots[q];
      if (j < 0 || j >= at) continue;
      let r = this.hashes[j] & mask;
      while (slots[r] >= 0) r = (r + 1) & mask;
      slots[r] = j;
    }
    this.slots = slots;
  }
}

function hash(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return h;
}
