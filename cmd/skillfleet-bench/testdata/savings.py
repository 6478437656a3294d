#!/usr/bin/env python3
"""Exact figures for savings_test.go, computed independently of the Go code. Standard library only.

A case of runs n and confidence c needs k = ceil(c * n) passes. Played one epoch at a time
(skillfleet-bench savings --serial), curtailment stops it at the first epoch after which the
verdict can no longer change: k passes, or n - k + 1 failures (no epoch errors here). Its
expected epochs and tokens, a passing epoch costing 1 token and a failing one FAIL, are sums
over the (passes, fails) states of the walk, exactly:

    E[epochs] = sum over stopping states (s, f) of P(s, f) * (s + f)
    E[tokens] = sum over stopping states (s, f) of P(s, f) * (s + FAIL * f)

Regenerate with:  python3 cmd/skillfleet-bench/testdata/savings.py > cmd/skillfleet-bench/testdata/savings.json
"""
import json
import math
from fractions import Fraction

FAIL = Fraction(3, 2)
CASES = [
    # runs, confidence, pass probability
    (5, 0.8, 0.98),
    (5, 0.8, 0.75),
    (5, 0.8, 0.05),
    (10, 0.9, 0.97),
    (10, 0.7, 0.6),
    (3, 1.0, 0.99),
    (3, 1.0, 0.5),
]


def need(n, c):
    return max(1, math.ceil(c * n - 1e-9))


def exact(n, c, p):
    k = need(n, c)
    p = Fraction(p).limit_denominator(10**6)
    states = {(0, 0): Fraction(1)}
    epochs = tokens = Fraction(0)
    p_pass = Fraction(0)
    while states:
        nxt = {}
        for (s, f), pr in states.items():
            for ds, q in ((1, p), (0, 1 - p)):
                s2, f2 = s + ds, f + (1 - ds)
                w = pr * q
                if s2 >= k or f2 > n - k:
                    epochs += w * (s2 + f2)
                    tokens += w * (s2 + FAIL * f2)
                    if s2 >= k:
                        p_pass += w
                else:
                    nxt[(s2, f2)] = nxt.get((s2, f2), 0) + w
        states = nxt
    return float(epochs), float(tokens), float(p_pass)


out = {"fail_tokens": float(FAIL), "cases": []}
for n, c, p in CASES:
    e, t, pp = exact(n, c, p)
    all_tokens = n * (p + float(FAIL) * (1 - p))
    out["cases"].append({"runs": n, "confidence": c, "p": p, "need": need(n, c),
                         "epochs": e, "tokens": t, "p_pass": pp, "all_tokens": all_tokens})
print(json.dumps(out, indent=1))
