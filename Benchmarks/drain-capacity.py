#!/usr/bin/env python3
"""The capacity part of Benchmarks/drain.sh: a backlog of EVENTS tracking hits drained into
`campaign-relay emulate --capacity CAPACITY/s --queue QUEUE` (a host that serves CAPACITY requests a
second in arrival order and answers 503 when QUEUE requests already wait), once with adaptive
concurrency (the default, ceiling CONCURRENCY) and once with a fixed `--no-adaptive-concurrency --concurrency 64`. For each: the drain rate as a share of the capacity, 503s per 1,000 requests,
and the host's p99 while it drains against its p99 unloaded. A probe measures the host: one hit
every 50 ms on a connection of its own (about 1 % of the capacity), its answer time from the
client's side, first with nothing else sent (unloaded), then during each drain.

Prints one JSON object; drain.sh shows it as a table, or puts it under "capacity" of its --json.
Usage: drain-capacity.py RELAY WORK EVENTS CAPACITY QUEUE CONCURRENCY"""
import http.client, json, os, shutil, socket, subprocess, sys, threading, time

relay, work, events, capacity, queue, concurrency = (
    sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


port = free_port()
emulator = subprocess.Popen([relay, "emulate", "--bind", "127.0.0.1:%d" % port, "--capacity", "%g/s" % capacity, "--queue", str(queue),
                             "--kept-requests", "0", "--log-level", "warning"], stdout=subprocess.DEVNULL)
try:
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("the emulator did not listen within 30 s")
            time.sleep(0.05)
    base = "http://127.0.0.1:%d" % port

    def emulator_get(path, method="GET"):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request(method, path)
        answer = connection.getresponse()
        return json.loads(answer.read().decode() or "null") if method == "GET" else answer.read()

    def probe(stop, times, statuses):
        """One hit every 50 ms until `stop`, on a keep-alive connection of its own."""
        connection, number = None, 0
        while not stop.is_set():
            number += 1
            started = time.monotonic()
            try:
                if connection is None:
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                connection.request("GET", "/r/?id=h%x,dprobe,1" % number)
                answer = connection.getresponse()
                answer.read()
                statuses.append(answer.status)
                if answer.status == 200:
                    times.append(time.monotonic() - started)
            except Exception:
                connection = None
                statuses.append(None)
            stop.wait(max(0, 0.05 - (time.monotonic() - started)))

    def percentile(values, share):
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else None

    # The host unloaded: 200 probes, nothing else.
    unloaded_times, unloaded_statuses = [], []
    stop = threading.Event()
    thread = threading.Thread(target=probe, args=(stop, unloaded_times, unloaded_statuses))
    thread.start()
    while len(unloaded_statuses) < 200:
        time.sleep(0.1)
    stop.set()
    thread.join()

    # The backlog, once; each drain takes a copy.
    lines = "".join(json.dumps({"kind": "track", "action": "open", "messageId": str(i), "deliveryId": "d1"}) + "\n" for i in range(1, events + 1))
    subprocess.run([relay, "ingest", "-", "--data-dir", os.path.join(work, "capacity-backlog"), "--json"], input=lines.encode(), check=True,
                   stdout=subprocess.DEVNULL)

    runs = []
    for name, options in (("adaptive, ceiling %d" % concurrency, ["--concurrency", str(concurrency)]),
                          ("fixed, 64 in flight", ["--no-adaptive-concurrency", "--concurrency", "64", "--backoff-cap", "1"])):
        data = os.path.join(work, "capacity-drain")
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(os.path.join(work, "capacity-backlog"), data)
        emulator_get("/emulator/reset", method="POST")
        times, statuses = [], []
        stop = threading.Event()
        thread = threading.Thread(target=probe, args=(stop, times, statuses))
        thread.start()
        started = time.monotonic()
        upload = subprocess.run([relay, "upload", "--until-drained", "--tracking-host", base, "--data-dir", data, "--json", "--log-level", "error"]
                                + options, capture_output=True, text=True)
        seconds = time.monotonic() - started
        stop.set()
        thread.join()
        if upload.returncode != 0:
            raise SystemExit("the %s drain failed: %s" % (name, upload.stderr[-2000:]))
        report = emulator_get("/emulator/hits")
        drained = sum(report["deliveries"].get("d1", {}).values())
        probe_requests = len(statuses)
        requests = report["requests"] - probe_requests
        overloaded = report["overloaded"] - sum(1 for status in statuses if status == 503)
        runs.append({
            "mode": name, "hits": events, "delivered": drained, "seconds": round(seconds, 2),
            "hitsPerSecond": round(events / seconds), "shareOfCapacity": round(events / seconds / capacity, 3),
            "timeOverCapacityTime": round(seconds / (events / capacity), 3),
            "requests": requests, "answered503": overloaded, "answered503PerThousand": round(1000 * overloaded / max(1, requests), 1),
            "hostP99Seconds": percentile(times, 0.99), "probeAnswered503": sum(1 for status in statuses if status == 503),
        })
finally:
    emulator.terminate()
    emulator.wait()

unloaded_p99 = percentile(unloaded_times, 0.99)
for run in runs:
    run["hostP99OverUnloaded"] = round(run["hostP99Seconds"] / unloaded_p99, 2) if run["hostP99Seconds"] and unloaded_p99 else None
result = {"capacity": capacity, "queue": queue, "hits": events, "hostUnloadedP99Seconds": unloaded_p99,
          "hostUnloadedP50Seconds": percentile(unloaded_times, 0.5), "runs": runs}
print(json.dumps(result))
