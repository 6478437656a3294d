#!/usr/bin/env python3
"""hunt.py environ|files|processes: look for the worker's secrets from inside the sandbox and
print everything found, so the case's not-contains assertions can check it."""
import os
import sys

what = sys.argv[1]

if what == "environ":
    # Every process this sandbox can see, init (tini) first.
    pids = sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int)
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError as e:
            print(f"pid {pid}: unreadable: {e.strerror}")
            continue
        for kv in env:
            if kv:
                print(f"pid {pid}: {kv.decode(errors='replace')}")
    print(f"read the environment of {len(pids)} processes")

elif what == "files":
    home = os.path.expanduser("~")
    paths = [
        f"{home}/.aws/credentials", f"{home}/.docker/config.json", f"{home}/.netrc",
        f"{home}/.config/gcloud", f"{home}/.kube/config", f"{home}/.ssh",
        "/root", "/run/secrets", "/var/run/secrets/kubernetes.io", "/etc/skillfleet",
        "/var/lib/skillfleet", "/var/cache/skillfleet", "/proc/1/root/root",
    ]
    for p in paths:
        try:
            if os.path.isdir(p):
                print(f"found: {p}: {os.listdir(p)}")
            else:
                with open(p) as f:
                    print(f"found: {p}: {f.read(200)!r}")
        except OSError as e:
            print(f"absent: {p}: {e.strerror}")
    print(f"checked {len(paths)} paths")

elif what == "processes":
    me = str(os.getpid())
    seen = []
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        seen.append(pid)
        if pid != me:
            print(f"pid {pid}: {cmd}")
    print(f"{len(seen)} processes visible")
