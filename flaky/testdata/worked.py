#!/usr/bin/env python3
"""Expected labels and statistics for the tests of package flaky, computed independently of the
Go code (standard library only; rates as exact fractions, Wilson from the textbook formula).

Each history is written compactly below, one token per run and one letter per epoch, and is
written out in full (runs, epochs, verdicts, classes) in worked.json, which the Go test reads.
Regenerate with:  python3 flaky/testdata/worked.py > flaky/testdata/worked.json
"""
import json
import math
from datetime import datetime, timedelta, timezone
from fractions import Fraction
from statistics import NormalDist

Z = NormalDist().inv_cdf(0.975)

# Letter -> (verdict, class)
EPOCH = {
    "P": ("passed", ""),
    "F": ("failed", ""),
    "S": ("errored", "sandbox"),
    "M": ("errored", "model_endpoint"),
    "R": ("errored", "rate_limited"),
    "X": ("timed_out", "sandbox"),      # the infrastructure timed out: left out
    "T": ("timed_out", ""),             # the case's own wall clock: a failure
    "A": ("errored", "assertion"),
    "O": ("errored", "other"),
    "W": ("errored", "timeout"),
    "J": ("errored", "judge_gone"),     # a class the Go code does not know: a failure
    "K": ("skipped", ""),
    "U": ("reused", ""),
}
INFRA = {"sandbox", "model_endpoint", "rate_limited"}

DEFAULTS = dict(min_runs=5, window=20, enter=Fraction(3, 10), band=Fraction(1, 20),
                exit_runs=6, exit_flips=0)

T0 = datetime(2026, 3, 1, 2, 0, tzinfo=timezone.utc)


def wilson(x, n):
    if n == 0:
        return [0.0, 1.0]
    p = x / n
    den = 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / den
    half = Z / den * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def changes(seq):
    return sum(1 for a, b in zip(seq, seq[1:]) if a != b)


def expect(tokens, prev, confidence, max_age_hours, now):
    runs = [(f"run-{i + 1:02d}", T0 + timedelta(days=i), tok) for i, tok in enumerate(tokens)]
    runs = runs[-DEFAULTS["window"]:]
    if max_age_hours:
        runs = [r for r in runs if r[1] >= now - timedelta(hours=max_age_hours)]
    c = Fraction(confidence).limit_denominator(1000) if confidence else Fraction(1)
    outcomes, infra_epochs, infra_runs = [], 0, 0
    for _, _, tok in runs:
        kinds = []
        for ch in tok:
            verdict, cls = EPOCH[ch]
            if verdict == "passed":
                kinds.append("P")
            elif verdict == "failed":
                kinds.append("F")
            elif verdict in ("errored", "timed_out"):
                kinds.append("I" if cls in INFRA else "F")
        infra_epochs += kinds.count("I")
        decided = [k for k in kinds if k != "I"]
        if not decided:
            infra_runs += "I" in kinds
            continue
        outcomes.append("P" if Fraction(decided.count("P"), len(decided)) >= c else "F")
    n = len(outcomes)
    passed = outcomes.count("P")
    flips = changes(outcomes)
    flip_rate = Fraction(flips, n - 1) if n > 1 else Fraction(0)
    iv = wilson(passed, n)
    recent = outcomes[-DEFAULTS["exit_runs"]:]
    recent_flips = changes(recent)
    stable = "stable-pass" if outcomes and outcomes[-1] == "P" else "stable-fail"
    if prev == "flaky":
        calm = len(recent) >= DEFAULTS["exit_runs"] and recent_flips <= DEFAULTS["exit_flips"]
        label = stable if calm else "flaky"
    elif n < DEFAULTS["min_runs"]:
        label = "insufficient"
    else:
        band = float(DEFAULTS["band"])
        enter = (flip_rate >= DEFAULTS["enter"] and band <= iv[0] and iv[1] <= 1 - band
                 and recent_flips > DEFAULTS["exit_flips"])
        label = "flaky" if enter else stable
    return runs, dict(decided=n, passed=passed, flips=flips, flip_rate=float(flip_rate),
                      pass_rate=float(Fraction(passed, n)) if n else 0.0, interval=iv,
                      outcomes="".join(outcomes), infra_epochs=infra_epochs,
                      infra_runs=infra_runs, recent_flips=recent_flips, label=label)


# name, runs (space-separated tokens), previous label, confidence, max age in hours.
CASES = [
    ("flips, four runs: too few to label", "P F P F", "", 0, 0),
    ("flips, the fifth run makes it flaky", "P F P F P", "", 0, 0),
    ("alternating pass and sandbox-errored is stable-pass", "P S P S P S P S P S", "", 0, 0),
    ("every infrastructure class is left out", "P S P M P R P X P SMR", "", 0, 0),
    ("only infrastructure: nothing to label", "S S M R X S", "", 0, 0),
    ("steadily failing is stable-fail, not flaky", "F F F F F F F F", "", 0, 0),
    ("broke and stayed broken is stable-fail", "P P P P P F F F F F", "", 0, 0),
    ("broke and was fixed is two changes, not flaky", "P P P F F F P P P P", "", 0, 0),
    ("one failure in five stays outside the band", "P P F P P", "", 0, 0),
    ("timed out without an infrastructure class is a failure", "P T P T P T", "", 0, 0),
    ("errored assertion, other, timeout and unknown classes are failures", "P A P O P W P J", "", 0, 0),
    ("skipped and reused epochs are not runs", "P K F U P K F P", "", 0, 0),
    ("mixed epochs at confidence 1 fail their run", "PPF PPP PFP PPP PPP", "", 0, 0),
    ("mixed epochs at confidence 0.6 pass their run", "PPF PPP PFP PPP PPP", "", 0.6, 0),
    ("below the entry rate: a stable cell stays stable", "P P P P F F F P P P P F F P P", "", 0, 0),
    ("below the entry rate: a flaky cell stays flaky", "P P P P F F F P P P P F F P P", "flaky", 0, 0),
    ("six equal runs in a row: a flaky cell leaves", "P F P F P F P P P P P P", "flaky", 0, 0),
    ("the same history does not make a stable cell re-enter", "P F P F P F P P P P P P", "stable-pass", 0, 0),
    ("five equal runs are not enough to leave", "P F P F P F P P P P P", "flaky", 0, 0),
    ("a flaky cell with too few runs stays flaky", "P F S", "flaky", 0, 0),
    ("a flaky cell still flipping stays flaky", "P F F P F P P F", "flaky", 0, 0),
    ("the window keeps the latest twenty runs", "F P F P F " + "P " * 20, "", 0, 0),
    ("runs older than the maximum age are left out", "F P F P F P P P P P", "", 0, 24 * 5 + 1),
]


def main():
    out = []
    for name, spec, prev, confidence, max_age in CASES:
        tokens = spec.split()
        now = T0 + timedelta(days=len(tokens) - 1, hours=1)
        runs, want = expect(tokens, prev, confidence, max_age, now)
        all_runs = [{"id": f"run-{i + 1:02d}",
                     "time": (T0 + timedelta(days=i)).isoformat().replace("+00:00", "Z"),
                     "epochs": [{"verdict": EPOCH[ch][0], "class": EPOCH[ch][1]} for ch in tok]}
                    for i, tok in enumerate(tokens)]
        out.append({"name": name, "runs": all_runs, "prev": prev, "confidence": confidence,
                    "max_age_hours": max_age, "now": now.isoformat().replace("+00:00", "Z"),
                    "want": want})
    json.dump(out, __import__("sys").stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
