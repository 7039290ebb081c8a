#!/usr/bin/env python3
"""Slow and idle clients against a relay, beside a real one: IDLE connections that send nothing,
SLOW ones that send a request head a line every half second without ever finishing it (slowloris),
one that stalls in the middle of a body, and a keep-alive client that pauses under the header
timeout between requests. Prints JSON: how many of each the server closed, and when, and how the
real client fared. Usage: slow_clients.py PORT IDLE SLOW SECONDS"""
import json, select, socket, sys, threading, time

port, idle_count, slow_count, seconds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
start = time.monotonic()

def connect():
    s = socket.create_connection(("127.0.0.1", port))
    s.setblocking(False)
    return s

idle = [connect() for _ in range(idle_count)]
slow = [connect() for _ in range(slow_count)]
for s in slow:
    s.send(b"GET /healthz HTTP/1.1\r\nHost: relay\r\n")
stalled = connect()
stalled.send(b"POST /v1/events HTTP/1.1\r\nHost: relay\r\nContent-Type: application/x-ndjson\r\nContent-Length: 1000\r\n\r\n{\"kind\":")
closed_at = {}  # socket -> seconds since start

def poll(sockets):
    for s in sockets:
        if s in closed_at:
            continue
        try:
            ready, _, _ = select.select([s], [], [], 0)
            if ready:
                data = s.recv(65536)
                if not data:
                    closed_at[s] = time.monotonic() - start
        except OSError:
            closed_at[s] = time.monotonic() - start

# The real client: requests on a keep-alive connection, with pauses under the header timeout.
real = {"ok": 0, "failed": 0, "maxSeconds": 0.0, "medianSeconds": 0.0}
latencies = []
def real_client():
    import http.client
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    while time.monotonic() - start < seconds:
        began = time.monotonic()
        try:
            connection.request("GET", "/healthz")
            response = connection.getresponse()
            response.read()
            if response.status == 200:
                real["ok"] += 1
            else:
                real["failed"] += 1
        except Exception:
            real["failed"] += 1
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        latencies.append(time.monotonic() - began)
        time.sleep(0.5)
thread = threading.Thread(target=real_client)
thread.start()

next_line = 0
while time.monotonic() - start < seconds:
    poll(idle + slow + [stalled])
    if time.monotonic() - start > next_line * 0.5:
        for s in slow:
            if s not in closed_at:
                try:
                    s.send(b"X-Trickle-%d: x\r\n" % next_line)
                except OSError:
                    closed_at[s] = time.monotonic() - start
        next_line += 1
    time.sleep(0.05)
thread.join()
if latencies:
    latencies.sort()
    real["maxSeconds"] = latencies[-1]
    real["medianSeconds"] = latencies[len(latencies) // 2]

def summary(sockets):
    times = sorted(closed_at[s] for s in sockets if s in closed_at)
    return {"open": len(sockets), "closed": len(times), "lastClosedAfter": round(times[-1], 2) if times else None}

print(json.dumps({"idle": summary(idle), "slow": summary(slow), "stalledBody": summary([stalled]), "real": real}))
