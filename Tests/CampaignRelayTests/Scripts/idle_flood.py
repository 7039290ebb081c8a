#!/usr/bin/env python3
"""COUNT idle connections to a relay held for HOLD seconds while a real client works beside them,
then requests with heads of growing size. Prints JSON: the connections opened and still open at the
end, the real client's latency before and during the flood (a new connection per request, so the
accept path is measured too), and for each head size the status answered (null if none) and the
bytes sent before the relay answered or closed. Usage: idle_flood.py PORT COUNT HOLD"""
import http.client, json, resource, select, socket, sys, threading, time

port, count, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, count + 1024)), hard))


def real_client(seconds, at_least=0):
    """GET /healthz and POST one event, alternately, each on a new connection, every 50 ms, for
    `seconds` and at least `at_least` requests: a count that does not depend on how fast a loaded
    machine runs this script."""
    latencies, failed, n = [], 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end or n < at_least:
        began = time.monotonic()
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            if n % 2 == 0:
                connection.request("GET", "/healthz")
            else:
                body = '{"kind":"track","action":"impression","messageId":"%d","deliveryId":"flood"}' % (n + 1)
                connection.request("POST", "/v1/events", body=body, headers={"Content-Type": "application/x-ndjson"})
            answer = connection.getresponse()
            answer.read()
            connection.close()
            if answer.status == 200:
                latencies.append(time.monotonic() - began)
            else:
                failed += 1
        except Exception:
            failed += 1
        n += 1
        time.sleep(0.05)
    latencies.sort()
    pick = lambda q: round(latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000, 2) if latencies else None
    return {"ok": len(latencies), "failed": failed, "p50Ms": pick(0.5), "p99Ms": pick(0.99), "maxMs": pick(1.0)}


before = real_client(2)
opened, idle = 0, []
started = time.monotonic()
for _ in range(count):
    try:
        idle.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        opened += 1
    except OSError as error:
        print("connect failed after %d: %s" % (opened, error), file=sys.stderr)
        break
open_seconds = time.monotonic() - started


def settle(timeout):
    """Seconds until the relay answers a GET /healthz (None if it does not within `timeout`). A
    connection counts as open once the kernel queues it, before the relay accepts it: after the
    flood opens, this waits out the relay's accept queue, so `during` measures a relay holding the
    flood, not one still taking it in; after the flood closes, it is how long the relay takes to
    put 10,000 connections away and answer again."""
    began = time.monotonic()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        connection.request("GET", "/healthz")
        answer = connection.getresponse()
        answer.read()
        connection.close()
        return round(time.monotonic() - began, 2) if answer.status == 200 else None
    except Exception:
        return None


accepted_seconds = settle(300)
during = real_client(hold, at_least=50)


def still_open(sockets):
    """Sockets the relay has not closed: nothing to read (a close reads as EOF), or data."""
    poller = select.poll()
    for s in sockets:
        poller.register(s, select.POLLIN)
    readable = {fd for fd, _ in poller.poll(0)}
    open_now = 0
    for s in sockets:
        if s.fileno() not in readable:
            open_now += 1
            continue
        try:
            if s.recv(1, socket.MSG_PEEK):
                open_now += 1
        except OSError:
            pass
    return open_now


open_at_end = still_open(idle)


def big_head(size):
    """A GET whose one header value is `size` bytes, sent in 64 KiB pieces. Sending stops as soon
    as the relay answers or closes: `sent` is what went out before that, not what loopback's
    socket buffers took in while a loaded relay was still closing."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sent = 0
    payload = b"GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Big: "
    try:
        sock.sendall(payload)
        piece = b"a" * 65536
        # poll, not select: with the idle connections open, this descriptor is past select's 1024.
        answered = select.poll()
        answered.register(sock, select.POLLIN | select.POLLHUP | select.POLLERR)
        while sent < size:
            if answered.poll(0):
                break
            chunk = piece[: size - sent]
            sock.sendall(chunk)
            sent += len(chunk)
        else:
            sock.sendall(b"\r\n\r\n")
    except OSError:
        pass
    status = None
    try:
        sock.settimeout(5)
        line = sock.makefile("rb").readline()
        if line.startswith(b"HTTP/1.1 "):
            status = int(line.split()[1])
    except (OSError, ValueError):
        pass
    sock.close()
    return {"headerBytes": size, "status": status, "sentBeforeClose": sent}


heads = [big_head(size) for size in (60 * 1024, 100 * 1024, 128 << 20)]
for s in idle:
    s.close()
answered_after_close_seconds = settle(300)
print(json.dumps({"opened": opened, "openSeconds": round(open_seconds, 2), "acceptedSeconds": accepted_seconds, "openAtEnd": open_at_end, "before": before, "during": during, "heads": heads, "answeredAfterCloseSeconds": answered_after_close_seconds}))
