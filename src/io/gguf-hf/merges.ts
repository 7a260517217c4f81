/**
 * BPE merges recovered from a vocabulary, for SentencePiece GGUF files, which carry none: every
 * split of a token into two tokens of the vocabulary is a merge, ranked by the token's score
 * (best first), then by the lengths of its two parts; transformers' `generate_merges` does the
 * same, and a different rank order tokenizes differently.
 */

/**
 * Merges for `tokens` (index = id) ranked by `score` (higher first; ties keep vocabulary order).
 * Lengths and splits count Unicode code points, as Python's do. A token listed twice keeps its
 * last id, and is visited at its first place, as a Python dict built from the list does.
 */
export function mergesFromScores(
  tokens: readonly string[],
  score: (index: number) => number,
): Array<readonly [string, string]> {
  const ids = new Map<string, number>();
  tokens.forEach((t, i) => ids.set(t, i));
  // dict(zip(tokens, scores)): first place, last score
  const order = new Map<string, number>();
  tokens.forEach((t, i) => order.set(t, score(i)));

  interface Merge { readonly l: string; readonly r: string; readonly s: number; readonly ll: number; readonly rl: number }
  const merges: Merge[] = [];
  for (const [token, s] of order) {
    const cps = Array.from(token);
    const local: Array<Merge & { li: number; ri: number }> = [];
    for (let k = 1; k < cps.length; k++) {
      const l = cps.slice(0, k).join("");
      const r = cps.slice(k).join("");
      const li = ids.get(l);
      const ri = ids.get(r);
      if (li !== undefined && ri !== undefined) local.push({ l, r, s, ll: k, rl: cps.length - k, li, ri });
    }
    local.sort((a, b) => a.li - b.li || a.ri - b.ri);
    for (const m of local) merges.push(m);
  }
  // Python's sorted(..., reverse=True) is stable: equal keys keep their order
  merges.sort((a, b) => cmp(b.s, a.s) || b.ll - a.ll || b.rl - a.rl);
  return merges.map((m) => [m.l, m.r] as const);
}

function cmp(a: number, b: number): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
