#!/usr/bin/env python3
"""Print one deployment log line in the house format."""
import datetime
import json
import sys

ACTIONS = {"deploy", "rollback", "approve"}

if len(sys.argv) != 4 or sys.argv[3] not in ACTIONS:
    sys.stderr.write("usage: logline.py ENV ACTOR deploy|rollback|approve\n")
    sys.exit(2)
env, actor, action = sys.argv[1:]
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
print(json.dumps({"time": now, "env": env.upper(), "actor": actor, "action": action, "tags": [env.lower(), action]}))
