#!/usr/bin/env python3
"""Slow and idle clients against a relay, beside a real one: IDLE connections that send nothing,
SLOW ones that send a request head a line every half second without ever finishing it (slowloris),
one that stalls in the middle of a body, and a keep-alive client that pauses under the header
timeout between requests. Prints JSON: how many of each the server closed, and when, and how the
real client fared.

Usage: slow_clients.py PORT IDLE SLOW SECONDS [CLOSE_WAIT]

The flood is held SECONDS. With CLOSE_WAIT, the script then goes on watching until the relay has
closed every flood connection or CLOSE_WAIT seconds have passed since the start: on a loaded
machine the closes land late, and a count taken at a fixed time would say they never came."""
import json, multiprocessing, select, socket, sys, time

port, idle_count, slow_count, seconds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
close_wait = float(sys.argv[5]) if len(sys.argv) > 5 else None
start = time.monotonic()

# The real client: requests on a keep-alive connection it opens once the flood is open, with
# pauses under the header timeout. It runs in a process of its own (forked before the flood's
# sockets exist, so it holds none of them), so that what it measures is the relay's service and not
# this process's interpreter lock, which the poller of 800 sockets below holds most of the time. It
# goes on until SECONDS have passed and it has made at least REAL_REQUESTS requests: a count that
# does not depend on how fast a loaded machine runs it. Its requests wait up to 60 s: a loaded
# machine takes seconds to accept the flood's connections queued before its own.
REAL_REQUESTS = 10


def real_client(flood_open, results):
    import http.client

    def get(connection):
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        response.read()
        return response.status

    flood_open.wait(60)
    ok = failed = reconnects = 0
    latencies, answered_at = [], []
    connection, reused = http.client.HTTPConnection("127.0.0.1", port, timeout=60), False
    while time.monotonic() - start < seconds or ok + failed < REAL_REQUESTS:
        began = time.monotonic()
        try:
            try:
                status = get(connection)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # The relay closed the kept-alive connection before this request's answer: no
                # request part had arrived for the idle timeout (on a loaded machine an answer
                # that took 2.9 s and the 0.5 s pause made 3.4 s). As HTTP/1.1 clients do for an
                # idempotent request (RFC 9112, 9.3.1), it goes again once on a new connection.
                if not reused:
                    raise
                reconnects += 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                status = get(connection)
            reused = True
            if status == 200:
                ok += 1
                answered_at.append(time.monotonic() - start)
            else:
                failed += 1
        except Exception:
            failed += 1
            connection, reused = http.client.HTTPConnection("127.0.0.1", port, timeout=60), False
        latencies.append(time.monotonic() - began)
        time.sleep(0.5)
    latencies.sort()
    results.put({"ok": ok, "failed": failed, "reconnects": reconnects, "answeredAt": answered_at,
                 "maxSeconds": latencies[-1] if latencies else 0.0,
                 "medianSeconds": latencies[len(latencies) // 2] if latencies else 0.0})


# fork, not spawn: a spawned child would run this module's top level again.
forking = multiprocessing.get_context("fork")
flood_open, results = forking.Event(), forking.Queue()
real_process = forking.Process(target=real_client, args=(flood_open, results))
real_process.start()


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
flood = idle + slow + [stalled]
flood_open.set()
by_descriptor = {s.fileno(): s for s in flood}
closed_at = {}  # socket -> seconds since start
poller = select.poll()
for s in flood:
    poller.register(s, select.POLLIN | select.POLLHUP | select.POLLERR)


def poll():
    """Marks the sockets the relay closed: one poll over all of them, then a read of each ready one
    (a close reads as EOF or fails)."""
    for descriptor, _ in poller.poll(0):
        s = by_descriptor[descriptor]
        try:
            if s.recv(65536):
                continue
        except BlockingIOError:
            continue
        except OSError:
            pass
        closed_at[s] = time.monotonic() - start
        poller.unregister(s)


def watching():
    elapsed = time.monotonic() - start
    if elapsed < seconds:
        return True
    return close_wait is not None and elapsed < close_wait and len(closed_at) < len(flood)


next_line = 0
while watching():
    poll()
    if time.monotonic() - start > next_line * 0.5:
        for s in slow:
            if s not in closed_at:
                try:
                    s.send(b"X-Trickle-%d: x\r\n" % next_line)
                except OSError:
                    closed_at[s] = time.monotonic() - start
                    poller.unregister(s)
        next_line += 1
    time.sleep(0.05)
real = results.get()
real_process.join()

# Answers the real client had before the relay closed its first flood connection: a relay whose
# connections or event loops the flood held would answer nobody until its timeout freed them.
first_close = min(closed_at.values(), default=None)
real["answeredBeforeFirstClose"] = sum(1 for at in real.pop("answeredAt") if first_close is None or at < first_close)
real["firstCloseAfter"] = round(first_close, 2) if first_close is not None else None


def summary(sockets):
    times = sorted(closed_at[s] for s in sockets if s in closed_at)
    return {"open": len(sockets), "closed": len(times),
            "firstClosedAfter": round(times[0], 2) if times else None,
            "lastClosedAfter": round(times[-1], 2) if times else None}


print(json.dumps({"idle": summary(idle), "slow": summary(slow), "stalledBody": summary([stalled]), "real": real}))
