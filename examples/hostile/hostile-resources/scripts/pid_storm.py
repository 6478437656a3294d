#!/usr/bin/env python3
"""Start thousands of long sleeps until the kernel refuses a fork, then report and clean up.

The sandbox's pids limit (256 by default, threads included) stops the storm; the script prints
"pid storm contained" only when a fork was refused below that limit.
"""
import subprocess


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


# cgroup v1, then v2.
limit = read("/sys/fs/cgroup/pids/pids.max") or read("/sys/fs/cgroup/pids.max") or "unknown"
kids, refused = [], None
try:
    for _ in range(5000):
        kids.append(subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
except OSError as e:
    refused = e
for k in kids:
    k.kill()
for k in kids:
    k.wait()
print(f"started {len(kids)} sleeps; pids.max is {limit}; refused: {refused}")
if refused is not None and limit.isdigit() and len(kids) < int(limit):
    print("pid storm contained")
else:
    print("pid storm NOT contained")
