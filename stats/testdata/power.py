#!/usr/bin/env python3
"""Expected values for the power and noise-floor tests of package stats (power_test.go),
computed independently of the Go code. Standard library only.

The minimum detectable difference of a paired comparison of n cases whose per-case differences
(B's pass rate minus A's) have variance s2:

    mde = (z(1 - alpha/2) + z(power)) * sqrt(s2 / n),   alpha = 0.05, power = 0.8

(the two-sided z-test of the mean difference, the wrong-direction tail ignored), at least 6/n
(the exact paired tests need six differing cases to reach p <= 0.05: 2 * 2**-6 = 0.03125, while
2 * 2**-5 = 0.0625), none when n < 6 or mde > 1.

Regenerate with:  python3 stats/testdata/power.py > stats/testdata/power.json
"""
import json
import math
from fractions import Fraction
from statistics import NormalDist

ALPHA, POWER = 0.05, 0.8
Z = NormalDist().inv_cdf(1 - ALPHA / 2) + NormalDist().inv_cdf(POWER)
ZW = NormalDist().inv_cdf(0.975)


def mde(n, s2):
    if n < 6:
        return None
    d = max(Z * math.sqrt(s2 / n), 6 / n)
    return None if d > 1 else d


def wilson(x, n):
    if n == 0:
        return [0.0, 1.0]
    p = x / n
    den = 1 + ZW * ZW / n
    centre = (p + ZW * ZW / (2 * n)) / den
    half = ZW / den * math.sqrt(p * (1 - p) / n + ZW * ZW / (4 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def sample_variance(d):
    n = len(d)
    if n < 2:
        return Fraction(0)
    m = sum(d) / n
    return sum((x - m) ** 2 for x in d) / (n - 1)


out = {"z_sum": Z, "mde": [], "noise": [], "compare": []}

# The table of mde against n and s2 (s2 = flip / epochs for an epoch flip rate).
for n in [1, 5, 6, 10, 20, 30, 50, 100, 200, 1000, 10000]:
    for s2 in [0.0, 0.01, 0.05, 0.1, 0.25, 0.32 / 3, 0.5, 1.0]:
        out["mde"].append({"cases": n, "variance": s2, "mde": mde(n, s2)})

# A/A cases: (passed a, decided a, passed b, decided b); the flip is the case outcome (every
# decided epoch passed) differing; the variance is the mean squared difference in rate.
AA = [
    # runs 1: 40 cases, 6 flips (3 each way), 34 agreeing.
    [(1, 1, 0, 1)] * 3 + [(0, 1, 1, 1)] * 3 + [(1, 1, 1, 1)] * 25 + [(0, 1, 0, 1)] * 9,
    # runs 3: rates differ without the outcome flipping, and the other way round.
    [(3, 3, 2, 3), (2, 3, 1, 3), (0, 3, 0, 3), (3, 3, 3, 3), (1, 3, 3, 3), (2, 3, 2, 3)] * 5,
    # a case not decided in one arm is not paired.
    [(1, 1, 1, 1)] * 7 + [(0, 0, 1, 1)],
]
for cases in AA:
    paired = [c for c in cases if c[1] > 0 and c[3] > 0]
    flips = sum(1 for (pa, da, pb, db) in paired if (pa == da) != (pb == db))
    deltas = [Fraction(pb, db) - Fraction(pa, da) for (pa, da, pb, db) in paired]
    s2 = sum(d * d for d in deltas) / len(paired)
    out["noise"].append({
        "cases": [list(c) for c in cases],
        "paired": len(paired), "flipped": flips, "flip_rate": flips / len(paired),
        "interval": wilson(flips, len(paired)), "variance": float(s2), "mde": mde(len(paired), float(s2)),
    })

# A comparison's own design: the sample variance (n - 1) of its per-case differences.
CMP = [
    [(0, 1, 1, 1)] * 8 + [(1, 1, 1, 1)] * 20 + [(1, 1, 0, 1)] * 2,
    [(1, 2, 2, 2)] * 10 + [(2, 2, 2, 2)] * 10 + [(0, 2, 1, 2)] * 5,
    [(0, 1, 1, 1)] * 5,
]
for cases in CMP:
    deltas = [Fraction(pb, db) - Fraction(pa, da) for (pa, da, pb, db) in cases]
    s2 = float(sample_variance(deltas))
    m = mde(len(cases), s2)
    out["compare"].append({"cases": [list(c) for c in cases], "variance": s2, "mde": m,
                           "underpowered": m is None or m > 0.1})

json.dump(out, __import__("sys").stdout, indent=1)
print()
