#!/usr/bin/env python3
"""Allocate memory in 64 MiB steps up to 4 GiB, touching every page, and report each step.

Under the sandbox's memory limit (512 MiB by default, swap equal) the kernel's OOM killer ends
this process with SIGKILL long before the last step.
"""
STEP = 64 << 20
held = []
for i in range(1, 4096 // 64 + 1):
    held.append(bytearray(STEP))  # zero-filled: every page is written, so it is really resident
    print(f"held {i * 64} MiB", flush=True)
print("allocated 4 GiB: no memory limit", flush=True)
