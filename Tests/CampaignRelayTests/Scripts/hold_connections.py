#!/usr/bin/env python3
"""Opens COUNT TCP connections to a relay on 127.0.0.1:PORT and holds them, sending nothing, for
SECONDS, then closes them all: more connections than the relay's descriptor limit (ulimit -n), so
that its accept fails with EMFILE while they are held. The kernel completes the handshakes the
relay cannot accept (they wait in the listen backlog), so every connect may succeed. Prints JSON:
how many connected, how many failed to, and how many the relay closed while held.
Usage: hold_connections.py PORT COUNT SECONDS"""
import json, select, socket, sys, time

port, count, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
held, failed = [], 0
for _ in range(count):
    try:
        held.append(socket.create_connection(("127.0.0.1", port), timeout=0.5))
    except OSError:
        failed += 1
print(json.dumps({"event": "holding", "connected": len(held), "failed": failed}), flush=True)
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    time.sleep(0.1)
closed_by_relay = 0
for s in held:
    try:
        ready, _, _ = select.select([s], [], [], 0)
        if ready and s.recv(1) == b"":
            closed_by_relay += 1
    except OSError:
        closed_by_relay += 1
    s.close()
print(json.dumps({"event": "closed", "connected": len(held), "failed": failed, "closedByRelay": closed_by_relay}), flush=True)
