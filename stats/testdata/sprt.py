#!/usr/bin/env python3
"""Expected values for the SPRT tests of package stats, computed independently of the Go code.

Wald's SPRT of a Bernoulli pass rate, H1: p = c + d against H0: p = c - d, is written here in
its linear form (Wald 1947, ch. 5): after n decided epochs with s passes the case passes when
s >= h1 + slope * n and fails when s <= -h0 + slope * n, where

    g1 = ln(p1 / p0),  g2 = ln((1 - p0) / (1 - p1)),  slope = g2 / (g1 + g2),
    h1 = ln((1 - beta) / alpha) / (g1 + g2),  h0 = ln((1 - alpha) / beta) / (g1 + g2).

The operating characteristics are exact (dynamic programming over the (passes, fails) states
with Fractions of the probabilities' float values), not simulated: the chance of passing at
p0 and at p1, and the expected number of epochs, for the test cut off at max_runs decided
epochs (then decided by the fixed rule, passes >= ceil(c * n)) and for a cut-off far enough
away to be the untruncated test. The fixed design with the same error rates at the edges is
the smallest n with a threshold k such that P(X >= k | p0) <= alpha and P(X < k | p1) <= beta,
by exact binomial sums. Wald's boundaries are conservative: the test's own error rates at the
edges come out below alpha and beta (0.045 and 0.034 at 0.8 +- 0.1, 0.05, 0.05), so the fixed
design that errs as little as the test does ("FixedMatchedN", "FixedMatchedK": the same
search with the untruncated test's exact P(pass | p0) and P(fail | p1) for alpha and beta) is
the one with the same error rates, and the one its mean epochs are compared with.

Regenerate with:  python3 stats/testdata/sprt.py > stats/testdata/sprt.json
"""
import json
import math

CONFIGS = [
    # confidence, delta, alpha, beta
    (0.8, 0.1, 0.05, 0.05),
    (0.5, 0.1, 0.05, 0.05),
    (0.9, 0.05, 0.05, 0.1),
    (0.7, 0.15, 0.1, 0.05),
]
LINES_UP_TO = 40
MAX_RUNS = [20, 1000]


def lines(c, d, alpha, beta, n):
    p0, p1 = c - d, c + d
    g1 = math.log(p1 / p0)
    g2 = math.log((1 - p0) / (1 - p1))
    slope = g2 / (g1 + g2)
    h1 = math.log((1 - beta) / alpha) / (g1 + g2)
    h0 = math.log((1 - alpha) / beta) / (g1 + g2)
    pass_line = math.ceil(h1 + slope * n - 1e-12)
    fail_line = math.floor(-h0 + slope * n + 1e-12)
    return (pass_line if pass_line <= n else n + 1), (fail_line if fail_line >= 0 else -1)


def need(c, n):
    return max(1, math.ceil(c * n - 1e-9))


def operating(c, d, alpha, beta, p, max_runs):
    """P(pass), P(undecided at max_runs), E[epochs] of the SPRT cut off at max_runs."""
    states = {0: 1.0}  # passes -> probability, all with n decided epochs
    p_pass = p_undecided = expected = 0.0
    for n in range(max_runs):
        nxt = {}
        for s, pr in states.items():
            for ds, q in ((1, p), (0, 1 - p)):
                s2 = s + ds
                pl, fl = lines(c, d, alpha, beta, n + 1)
                w = pr * q
                if s2 >= pl:
                    p_pass += w
                    expected += w * (n + 1)
                elif s2 <= fl:
                    expected += w * (n + 1)
                else:
                    nxt[s2] = nxt.get(s2, 0.0) + w
        states = nxt
        if not states:
            break
    for s, pr in states.items():
        p_undecided += pr
        expected += pr * max_runs
        if s >= need(c, max_runs):
            p_pass += pr
    return p_pass, p_undecided, expected


def binom_tail_ge(n, k, p):
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def fixed_design(c, d, alpha, beta):
    p0, p1 = c - d, c + d
    for n in range(1, 2000):
        for k in range(n + 1):
            if binom_tail_ge(n, k, p0) <= alpha and 1 - binom_tail_ge(n, k, p1) <= beta:
                return n, k
    raise ValueError("no fixed design")


UNTRUNCATED = max(MAX_RUNS)


out = []
for c, d, alpha, beta in CONFIGS:
    entry = {
        "Confidence": c, "Delta": d, "Alpha": alpha, "Beta": beta,
        "PassLine": [], "FailLine": [], "Operating": [],
    }
    for n in range(1, LINES_UP_TO + 1):
        pl, fl = lines(c, d, alpha, beta, n)
        entry["PassLine"].append(pl)
        entry["FailLine"].append(fl)
    for m in MAX_RUNS:
        op = {"MaxRuns": m}
        for name, p in (("P0", c - d), ("P1", c + d)):
            pp, pu, en = operating(c, d, alpha, beta, p, m)
            op[name] = {"PPass": pp, "PUndecided": pu, "Epochs": en}
        entry["Operating"].append(op)
    n, k = fixed_design(c, d, alpha, beta)
    entry["FixedN"], entry["FixedK"] = n, k
    far = next(op for op in entry["Operating"] if op["MaxRuns"] == UNTRUNCATED)
    n, k = fixed_design(c, d, far["P0"]["PPass"], 1 - far["P1"]["PPass"])
    entry["FixedMatchedN"], entry["FixedMatchedK"] = n, k
    out.append(entry)
print(json.dumps(out, indent=1))
