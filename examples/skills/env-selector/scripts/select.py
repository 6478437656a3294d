#!/usr/bin/env python3
"""Select a deployment environment from a request or a config (file or stdin)."""
import json
import os
import re
import sys

KNOWN = ("DEV", "UAT", "PROD")


def pick(text):
    words = re.findall(r"[A-Za-z]+", text)
    for w in words:
        if w.upper() in KNOWN:
            return w.upper()
    m = re.search(r"\bto\s+([A-Za-z]+)", text)
    if m:
        sys.stderr.write("unknown environment: %s\n" % m.group(1))
        sys.exit(2)
    return os.environ.get("SELECT_DEFAULT", "DEV")


def main(argv):
    region = None
    if len(argv) >= 2 and argv[0] == "--config":
        src = sys.stdin if argv[1] == "-" else open(argv[1])
        cfg = json.load(src)
        env = str(cfg.get("target", "")).upper()
        if env not in KNOWN:
            sys.stderr.write("unknown environment: %s\n" % cfg.get("target"))
            return 2
        region = cfg.get("region")
    else:
        env = pick(" ".join(argv))
    out = {"env": env, "confirm": env == "PROD"}
    if region:
        out["region"] = region
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
