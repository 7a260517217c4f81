/** What a model quantization did, for the summary. */

/** A node a mode would quantize that stays float, and why. */
export interface LeftFloat {
  /** The node's name, or "(OpType -> first output)" when it has none. */
  readonly node: string;
  readonly opType: string;
  readonly reason: string;
}

/** Counts of one quantization. */
export interface QuantizeReport {
  /** Nodes replaced by a quantized form. */
  quantized: number;
  /** Candidate nodes left float. */
  left: LeftFloat[];
}
