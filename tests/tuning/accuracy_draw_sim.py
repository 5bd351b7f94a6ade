#!/usr/bin/env python3
"""How close to 0 the total of lab 11's wide input may come before a correct
compensated sum fails the accuracy tests' 2^-22 limit: the figure behind
tests/support/accuracy_draw.hpp's kMinTotal. No GPU: a model in numpy.

The model draws wide_shuffled's distribution at 2^24 elements (magnitudes
2^-20 to 2^20, exponent rising with the index, random signs and significands,
then shuffled), not its exact values, and sums it the way a compensated
reduction does: 2^16 threads, each a running TwoSum pair (s, c) over its
strided elements in float32, then a tree of pairs, each step a TwoSum of the
two s and the float sum of the two c and its error, and s + c rounded last.
The exact total is math.fsum of the values in double (exact to 1e-7 here).

A correct sum's error before its last rounding (s + c in double against the
exact total) is what a relative limit cannot go under: the last rounding costs
at most 2^-24 of the total, so the limit 2^-22 holds while
(2^-22 - 2^-24) |total| >= that error. Printed per draw: the total, the
errors, and that smallest total. On three draws: errors of 9e-6 to 3e-5
before the last rounding, smallest totals about 50 to 180; kMinTotal = 2^16
is hundreds of times that.

usage: accuracy_draw_sim.py [SEED ...]
"""

from __future__ import annotations

import math
import sys

import numpy as np

F32 = np.float32


def wide_shuffled(rng: np.random.Generator, n: int) -> np.ndarray:
    j = np.arange(n)
    exponent = -20 + (40 * j) // (n - 1)
    significand = 1.0 + rng.integers(0, 1 << 23, n) / 2.0**23
    sign = rng.integers(0, 2, n) * 2 - 1
    return (sign * np.ldexp(significand, exponent)).astype(F32)[rng.permutation(n)]


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = (a + b).astype(F32)
    z = (s - a).astype(F32)
    return s, ((a - (s - z)).astype(F32) + (b - z).astype(F32)).astype(F32)


def compensated(x: np.ndarray, threads: int = 1 << 16) -> tuple[float, float]:
    """(the float result, s + c in double before the last rounding)."""
    s = np.zeros(threads, F32)
    c = np.zeros(threads, F32)
    for row in x.reshape(-1, threads):  # thread t reads t, t + threads, ...
        s, e = two_sum(s, row)
        c = (c + e).astype(F32)
    while len(s) > 1:
        h = len(s) // 2
        s, e = two_sum(s[:h], s[h:])
        c = (c[:h] + c[h:] + e).astype(F32)
    return float(F32(s[0] + c[0])), float(s[0]) + float(c[0])


def main() -> int:
    seeds = [int(a) for a in sys.argv[1:]] or [1, 2, 3]
    for seed in seeds:
        x = wide_shuffled(np.random.default_rng(seed), 1 << 24)
        exact = math.fsum(x.astype(np.float64))
        got, before = compensated(x)
        err = abs(before - exact)
        print(
            f"seed {seed}: total {exact:.6g}, error {abs(got - exact):.3g} "
            f"({err:.3g} before the last rounding): the 2^-22 limit holds for "
            f"totals of {err / (2.0**-22 - 2.0**-24):.3g} or more"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
