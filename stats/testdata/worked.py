#!/usr/bin/env python3
"""Expected values for the tests of package stats, computed independently of the Go code.

Standard library only (exact integer and Fraction arithmetic wherever the statistic allows it).
Regenerate with:  python3 stats/testdata/worked.py > stats/testdata/worked.json
"""
import itertools
import json
import math
from fractions import Fraction
from statistics import NormalDist

Z = NormalDist().inv_cdf(0.975)


def mcnemar_exact(b, c):
    """Two-sided exact McNemar: 2 * P(X <= min(b, c)), X ~ Binomial(b + c, 1/2), capped at 1."""
    m = b + c
    if m == 0:
        return 1.0
    tail = Fraction(sum(math.comb(m, i) for i in range(min(b, c) + 1)), 2**m)
    return float(min(Fraction(1), 2 * tail))


def wilson(x, n):
    p = x / n
    den = 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / den
    half = Z / den * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def holm(ps):
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


def deltas(cases):
    """Per-case difference B - A of pass rates, as exact fractions."""
    return [Fraction(pb, nb) - Fraction(pa, na) for pa, na, pb, nb in cases]


def signflip_enumerated(cases):
    """Exact two-sided sign-flip p by listing every sign pattern of the non-zero differences."""
    d = [x for x in deltas(cases) if x != 0]
    if not d:
        return 1.0
    obs = abs(sum(d))
    hits = sum(1 for signs in itertools.product((1, -1), repeat=len(d))
               if abs(sum(s * x for s, x in zip(signs, d))) >= obs)
    return hits / 2 ** len(d)


def signflip_distribution(cases):
    """The same p from the exact distribution of the signed sum (for vectors too long to list)."""
    d = [x for x in deltas(cases) if x != 0]
    dist = {Fraction(0): 1}
    for x in d:
        nxt = {}
        for s, k in dist.items():
            nxt[s + x] = nxt.get(s + x, 0) + k
            nxt[s - x] = nxt.get(s - x, 0) + k
        dist = nxt
    obs = abs(sum(d))
    return float(Fraction(sum(k for s, k in dist.items() if abs(s) >= obs), 2 ** len(d)))


def newcombe_paired(both, only1, only2, neither):
    """Newcombe (1998) method 10 for p1 - p2, p1 = (both+only1)/n, p2 = (both+only2)/n."""
    n = both + only1 + only2 + neither
    r1, r2 = both + only1, both + only2
    p1, p2 = r1 / n, r2 / n
    l1, u1 = wilson(r1, n)
    l2, u2 = wilson(r2, n)
    if 0 in (r1, n - r1, r2, n - r2):
        phi = 0.0
    else:
        a = both * neither - only1 * only2
        if a > n / 2:
            a -= n / 2
        elif a >= 0:
            a = 0
        phi = a / math.sqrt(r1 * (n - r1) * r2 * (n - r2))
    d = p1 - p2
    lo = d - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    hi = d + math.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    return [max(-1.0, lo), min(1.0, hi)]


# Per-case tallies (passed A, decided A, passed B, decided B).
SMALL = [
    [(0, 3, 3, 3), (1, 3, 2, 3), (2, 3, 2, 3), (0, 2, 1, 2), (1, 1, 1, 1)],
    [(0, 3, 3, 3)] * 6,
    [(2, 3, 1, 3), (0, 3, 3, 3), (1, 2, 2, 2), (0, 1, 1, 1), (3, 5, 4, 5), (1, 4, 4, 4),
     (2, 2, 0, 2), (0, 3, 2, 3), (1, 3, 3, 3)],
    [(1, 2, 0, 2), (0, 2, 1, 2), (2, 3, 1, 3), (1, 3, 2, 3)],
    [(0, 3, 1, 3), (0, 3, 2, 3), (1, 3, 3, 3), (0, 3, 3, 3), (1, 3, 2, 3), (2, 3, 3, 3),
     (0, 3, 1, 3), (3, 3, 2, 3), (0, 3, 2, 3), (1, 3, 1, 3), (0, 3, 3, 3), (2, 3, 3, 3),
     (1, 3, 2, 3), (0, 3, 1, 3)],
]
# Long enough (more than 20 differing cases) for the Go code to use the exact distribution, not
# the enumeration; the tallies follow fixed formulas so the file is reproducible.
def _long1(i):
    n = 3 if i % 4 else 4
    pa = (i * 5) % (n + 1)
    pb = min(n, pa + (2 if i % 3 == 0 else 1)) if i % 5 else max(0, pa - 1)
    return (pa, n, pb, n)


def _long2(i):
    na, nb = (2, 5) if i % 2 else (5, 2)
    pa = (i * 3) % (na + 1)
    pb = (i * 7 + 1) % (nb + 1)
    return (pa, na, pb, nb)


LONG = [[_long1(i) for i in range(34)], [_long2(i) for i in range(40)]]

out = {
    "mcnemar": [{"b": b, "c": c, "p": mcnemar_exact(b, c)}
                for b, c in [(0, 0), (3, 3), (1, 7), (0, 5), (2, 9), (10, 25), (25, 10), (40, 60),
                             (86, 150), (480, 560), (0, 1)]],
    "wilson": [{"passed": x, "n": n, "interval": wilson(x, n)}
               for x, n in [(0, 1), (1, 1), (0, 5), (3, 5), (5, 5), (7, 12), (81, 263), (15, 148),
                            (999, 1000), (50000, 100000)]],
    "holm": [{"p": ps, "adjusted": holm(ps)}
             for ps in [[0.01, 0.04, 0.03, 0.005], [0.5], [0.02, 0.02, 0.02], [0.001, 0.9, 0.04, 0.2, 0.012],
                        [0.3, 0.0001, 0.7, 0.049, 0.011, 0.2]]],
    "signflip": [{"cases": [list(c) for c in cs], "p": signflip_enumerated(cs)} for cs in SMALL]
    + [{"cases": [list(c) for c in cs], "p": signflip_distribution(cs)} for cs in LONG],
    "newcombe": [{"table": list(t), "interval": newcombe_paired(*t)}
                 for t in [(59, 6, 16, 80), (1, 1, 7, 12), (10, 3, 1, 6), (0, 0, 0, 5), (4, 0, 0, 0),
                           (20, 0, 5, 0), (12, 9, 2, 7), (100, 30, 20, 50)]],
}
print(json.dumps(out, indent=1))
