#!/usr/bin/env python3
"""connect.py tcp|udp HOST PORT [HOST PORT ...]: try to reach each target.

Prints "blocked: HOST:PORT: reason" when the attempt fails and "connected: HOST:PORT" when it
works; exits 0 either way, so the case's assertions decide. UDP sends a DNS query for
example.com and waits for any answer.
"""
import socket
import sys

DNS_QUERY = bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001")

proto, args = sys.argv[1], sys.argv[2:]
for host, port in zip(args[::2], args[1::2]):
    target = f"{host}:{port}"
    try:
        if proto == "tcp":
            socket.create_connection((host, int(port)), timeout=3).close()
        else:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.settimeout(3)
                s.sendto(DNS_QUERY, (host, int(port)))
                s.recvfrom(512)
    except OSError as e:
        print(f"blocked: {target}: {e}", flush=True)
    else:
        print(f"connected: {target}", flush=True)
