#!/usr/bin/env python3
"""Opens COUNT TCP connections to a relay on 127.0.0.1:PORT and holds them, sending nothing, until
it gets SIGUSR1 (or after MAX_SECONDS, should the test die first), then closes them all: more connections than the relay's descriptor limit (ulimit -n), so
that its accept fails with EMFILE while they are held. The kernel completes the handshakes the
relay cannot accept (they wait in the listen backlog), so every connect may succeed. Prints JSON:
how many connected, how many failed to, and how many the relay closed while held.
Usage: hold_connections.py PORT COUNT MAX_SECONDS"""
import json, select, signal, socket, sys, time

port, count, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
released = False


def release(_signal, _frame):
    global released
    released = True


signal.signal(signal.SIGUSR1, release)
held, failed = [], 0
for _ in range(count):
    try:
        held.append(socket.create_connection(("127.0.0.1", port), timeout=0.5))
    except OSError:
        failed += 1
print(json.dumps({"event": "holding", "connected": len(held), "failed": failed}), flush=True)
deadline = time.monotonic() + seconds
while not released and time.monotonic() < deadline:
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
