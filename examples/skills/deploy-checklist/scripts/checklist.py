#!/usr/bin/env python3
"""Print the pre-deployment checklist for an environment."""
import json
import sys

STEPS = ["Tests are green on the release branch", "Changelog is updated", "Rollback plan is written"]
PROD = ["A second engineer approved the change", "The on-call engineer is told"]


def main(argv):
    if not argv:
        sys.stderr.write("usage: checklist.py ENV [--json] [--extra -]\n")
        return 64
    env = argv[0].upper()
    steps = list(STEPS) + (PROD if env == "PROD" else [])
    if "--extra" in argv:
        steps += [line.strip() for line in sys.stdin if line.strip()]
    if "--json" in argv:
        print(json.dumps({"env": env, "steps": steps, "count": len(steps)}))
        return 0
    for i, s in enumerate(steps, 1):
        print("%d. %s" % (i, s))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
