#!/usr/bin/env python3
"""Expected values for the power and noise-floor tests of package stats (power_test.go),
computed independently of the Go code. Standard library only.

The minimum detectable difference of a paired comparison of n cases whose per-case differences
(B's pass rate minus A's) have variance s2 when the arms do not differ: the effect changes the
outcome of a fraction d of cases one way, on top of the noise, so a case's difference has mean
d, second moment s2 + d and variance s2 + d - d^2; the z-test of the mean difference against
its spread under the null given what differs detects d at power 0.8, alpha 0.05 (two-sided,
the wrong-direction tail ignored) when

    d * sqrt(n) = z(0.975) * sqrt(s2 + d) + z(0.8) * sqrt(s2 + d - d^2)

(Connor 1987 for one epoch), solved here by bisection on exact decimal steps; at least 6/n
(the exact paired tests need six differing cases to reach p <= 0.05: 2 * 2**-6 = 0.03125, while
2 * 2**-5 = 0.0625), none when n < 6 or no d <= 1 solves it. The "exact_power" table is the
exact power of McNemar's test at that d for one epoch per case (discordant pairs at rate
s2/2 each way plus d one way), to show how the approximation stands against the test used.

Regenerate with:  python3 stats/testdata/power.py > stats/testdata/power.json
"""
import json
import math
from fractions import Fraction
from statistics import NormalDist

ALPHA, POWER = 0.05, 0.8
ZA, ZB = NormalDist().inv_cdf(1 - ALPHA / 2), NormalDist().inv_cdf(POWER)
Z = ZA + ZB
ZW = NormalDist().inv_cdf(0.975)


def mde(n, s2):
    if n < 6:
        return None

    def gap(d):
        return d * math.sqrt(n) - ZA * math.sqrt(s2 + d) - ZB * math.sqrt(max(s2 + d - d * d, 0.0))

    if gap(1.0) < 0:
        return None
    # The first root: scan up in steps of 1e-4, then bisect the step where gap turns positive.
    lo = 1e-12
    step = 1e-4
    d = step
    while gap(d) < 0:
        lo, d = d, d + step
    hi = min(d, 1.0)
    for _ in range(80):
        mid = (lo + hi) / 2
        if gap(mid) < 0:
            lo = mid
        else:
            hi = mid
    return max(hi, 6 / n)


def mcnemar_p(b, c):
    m = b + c
    if m == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(m, i) for i in range(min(b, c) + 1)) / 2**m)


def exact_power(n, s2, d):
    """Power of McNemar's exact test with n pairs, discordant s2/2 one way and s2/2 + d the other."""
    p01, p10 = s2 / 2, s2 / 2 + d
    pd = p01 + p10
    q = p10 / pd
    total = 0.0
    for m in range(n + 1):
        pm = math.comb(n, m) * pd**m * (1 - pd) ** (n - m)
        if pm < 1e-15:
            continue
        for b in range(m + 1):
            if mcnemar_p(b, m - b) <= ALPHA:
                total += pm * math.comb(m, b) * q**b * (1 - q) ** (m - b)
    return total


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


out = {"z_sum": Z, "mde": [], "noise": [], "compare": [], "exact_power": []}
for n, s2 in [(30, 0.0), (40, 0.15), (60, 0.4), (100, 0.2), (200, 0.3), (500, 0.27)]:
    d = mde(n, s2)
    out["exact_power"].append({"cases": n, "variance": s2, "mde": d, "mcnemar_exact_power": exact_power(n, s2, d)})

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
