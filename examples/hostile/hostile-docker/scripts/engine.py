#!/usr/bin/env python3
"""engine.py sockets|abstract: try to reach the container engine from inside the sandbox.

sockets: connect to the well-known unix sockets of dockerd and containerd and, if one
answers, ask for the Docker version. abstract: list the abstract unix sockets this network
namespace can see (containerd-shim's live there; CVE-2020-15257) and try each.
"""
import os
import socket
import sys

SOCKETS = [
    "/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
    "/var/run/containerd/containerd.sock", "/run/docker/containerd/containerd.sock",
    os.path.expanduser("~/.docker/run/docker.sock"),
]


def attempt(addr, label):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(3)
            s.connect(addr)
            s.sendall(b"GET /version HTTP/1.0\r\nHost: docker\r\n\r\n")
            print(f"connected: {label}: {s.recv(200)!r}")
    except OSError as e:
        print(f"blocked: {label}: {e}")


if sys.argv[1] == "sockets":
    for p in SOCKETS:
        attempt(p, p)
elif sys.argv[1] == "abstract":
    names = []
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            parts = line.split()
            if len(parts) >= 8 and parts[7].startswith("@"):
                names.append(parts[7])
    print(f"abstract sockets visible: {len(names)}")
    for n in names:
        attempt("\0" + n[1:], n)
