/**
 * For tests of the SIMD quantization kernels (src/kernels/quant/simd.ts): run code with the fast
 * paths switched off, so that it gives the reference kernels' result.
 */
import { useQuantSimd } from "../../src/kernels/quant/simd.js";

/** `run()` with the SIMD fast paths off (the scalar reference kernels), switched back on after. */
export function withoutQuantSimd<T>(run: () => T): T {
  useQuantSimd(false);
  try {
    return run();
  } finally {
    useQuantSimd(true);
  }
}
