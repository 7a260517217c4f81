/**
 * The closest data-type names to one `dtype()` does not know, for its error message: people type
 * "fp8" (five types), "bfloat" or "e4m3" and deserve the names they meant, not a list of 28.
 */

/** At most this many names are suggested. */
const MAX_SUGGESTIONS = 6;

/**
 * `text` in the form every spelling is compared in: lower case, no "_" or "-", and a leading "fp"
 * or "f" before a digit read as "float" ("fp8" and "f8" both mean "float8").
 * @example normalize("FP8_E4M3") // "float8e4m3"
 */
function normalize(text: string): string {
  return text.toLowerCase().replace(/[_\-\s]/g, "").replace(/^fp?(?=\d)/, "float");
}

/** Levenshtein distance, stopping at `limit + 1` (only small distances matter). */
function distance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length];
}

/**
 * The canonical names closest to `text`, best first: those a spelling of which starts with it,
 * then those one of whose spellings contains it, then those within a few typos of one (a third of
 * its length, at least 1). `spellings` maps each canonical name to all its spellings.
 * @example closestNames("fp8", table) // ["float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float8e8m0"]
 * @example closestNames("flaot16", table) // ["float16"]
 */
export function closestNames(text: string, spellings: ReadonlyMap<string, readonly string[]>): string[] {
  const wanted = normalize(text);
  if (wanted === "") return [];
  const forms = [...spellings].map(([name, all]) => [name, all.map(normalize)] as const);
  const limit = Math.max(1, Math.floor(wanted.length / 3));
  const tiers: ((s: string) => boolean)[] = [
    (s) => s.startsWith(wanted),
    // One or two characters are inside too many names to say anything.
    (s) => wanted.length >= 3 && s.includes(wanted),
    (s) => distance(wanted, s, limit) <= limit,
  ];
  for (const matches of tiers) {
    const found = forms.filter(([, all]) => all.some(matches)).map(([name]) => name);
    if (found.length > 0) return found.slice(0, MAX_SUGGESTIONS);
  }
  return [];
}
