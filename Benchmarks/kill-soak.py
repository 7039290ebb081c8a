#!/usr/bin/env python3
"""The kill -9 soak of Benchmarks/kill-soak.sh: CYCLES times, start `campaign-relay serve` (forwarding
to `campaign-relay emulate`), let 3 clients load it for a random moment, then SIGKILL it. Then one
last start drains everything to the emulator, and the checks run: every id the relay answered 200
for is in the log exactly once (and nothing the clients never sent), `stats --json` counts equal
the log, the emulator got every event of the log, `wal verify` is clean. Prints the figures, or
JSON with --json; exit status 1 if a check failed.

Usage: kill-soak.py RELAY WORK CYCLES [--json] [--seed N]"""
import atexit, http.client, json, os, random, signal, socket, subprocess, sys, threading, time, urllib.request

relay, work, cycles = sys.argv[1], sys.argv[2], int(sys.argv[3])
as_json = "--json" in sys.argv
seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else random.randrange(1 << 32)
rng = random.Random(seed)
data = os.path.join(work, "data")
max_unsynced = 512
started = time.monotonic()


def log(text):
    print(text, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=120):
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return answer.status, answer.read().decode()


# Whatever happens to this driver, the processes it started do not outlive it.
children = []


@atexit.register
def stop_children():
    for child in children:
        if child.poll() is None:
            child.kill()
            child.wait()


# The emulator stands for Campaign for the whole run.
emulator_port = free_port()
emulator = subprocess.Popen([relay, "emulate", "--bind", f"127.0.0.1:{emulator_port}", "--log-level", "error"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
children.append(emulator)
campaign = f"http://127.0.0.1:{emulator_port}"
port = free_port()
base = f"http://127.0.0.1:{port}"


def wait_ready(process, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise SystemExit(f"the process exited with {process.returncode} before it answered")
        try:
            if get(base + "/readyz" if process is not None else campaign + "/emulator/hits", timeout=2)[0] == 200:
                return
        except Exception:
            pass
        time.sleep(0.01)
    raise SystemExit("no answer within %d s" % seconds)


def start_relay():
    process = subprocess.Popen(
        [relay, "serve", "--bind", f"127.0.0.1:{port}", "--data-dir", data, "--tracking-host", campaign, "--marketing-host", campaign,
         "--backoff-cap", "1", "--max-unsynced", str(max_unsynced), "--log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "serve.log"), "ab"))
    children.append(process)
    wait_ready(process)
    return process


# What the clients sent and what the relay acknowledged, by message id (an id is sent once: a
# request that fails is not retried, its events stay "attempted").
lock = threading.Lock()
attempted = set()
acknowledged = {}  # id -> (deliveryId, action)
failures = [0]
stopping = threading.Event()


def client(number):
    """Client 0 sends SDK hits one by one (GET /r/, tag 2: an open); 1 and 2 batches of 20 (POST /v1/events). Each pauses
    10 ms between requests, so the uploader keeps up and the last drain stays short: the soak is about kills, not rates."""
    next_id = (number + 1) * 1_000_000_000
    delivery = f"d{number}"
    connection = None
    while not stopping.is_set():
        if number == 0:
            ids, action = [next_id], "open"
            path, body, headers = "/r/?id=h%x,%s,2" % (next_id, delivery), None, {}
            method = "GET"
        else:
            ids = list(range(next_id, next_id + 20))
            action = "impression" if number == 1 else "click"
            body = "\n".join(json.dumps({"kind": "track", "action": action, "messageId": str(i), "deliveryId": delivery}) for i in ids)
            path, headers, method = "/v1/events", {"Content-Type": "application/x-ndjson"}, "POST"
        next_id += len(ids)
        with lock:
            attempted.update(ids)
        status = None
        try:
            if connection is None:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request(method, path, body=body, headers=headers)
            answer = connection.getresponse()
            answer.read()
            status = answer.status
        except Exception:
            connection = None
        if status == 200:
            with lock:
                for i in ids:
                    acknowledged[i] = (delivery, action)
        else:
            with lock:
                failures[0] += 1
        time.sleep(0.01)


wait_ready(None)
serve = start_relay()
threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(3)]
for thread in threads:
    thread.start()

killed_with_requests = 0
for cycle in range(cycles):
    with lock:
        before = len(acknowledged)
    # A moment chosen at random, once the relay took some events this life.
    time.sleep(rng.uniform(0.05, 0.6))
    with lock:
        if len(acknowledged) > before:
            killed_with_requests += 1
    serve.send_signal(signal.SIGKILL)
    serve.wait()
    serve = start_relay()
    if (cycle + 1) % 50 == 0:
        log("cycle %d/%d: %d events acknowledged, %.0f s" % (cycle + 1, cycles, len(acknowledged), time.monotonic() - started))

stopping.set()
for thread in threads:
    thread.join()
load_seconds = time.monotonic() - started

def backlog():
    """The uploader's backlog over all lanes, from /metrics."""
    metrics = get(base + "/metrics")[1]
    return sum(float(line.split()[-1]) for line in metrics.splitlines() if line.startswith("relay_upload_backlog{"))


# The last life drains: the emulator must get every event of the log. It stops waiting when the
# uploader says it has nothing left and the emulator has not moved for 30 s (events it skipped).
try:
    stored = json.loads(get(base + "/readyz")[1])["lastDurableSequence"]
    drain_started = time.monotonic()
    deadline = drain_started + 1800
    last_distinct, last_change = -1, time.monotonic()
    while time.monotonic() < deadline:
        distinct = json.loads(get(campaign + "/emulator/hits")[1])["distinct"]
        if distinct >= stored:
            break
        if distinct != last_distinct:
            last_distinct, last_change = distinct, time.monotonic()
        elif time.monotonic() - last_change > 30 and backlog() == 0:
            log("the uploader has no backlog, yet the emulator has %d of %d events" % (distinct, stored))
            break
        time.sleep(1)
    drain_seconds = time.monotonic() - drain_started
    hits = json.loads(get(campaign + "/emulator/hits?messages=1")[1])
finally:
    for process in (serve, emulator):
        process.send_signal(signal.SIGTERM)
    for process in (serve, emulator):
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def number(message_id):
    return int(message_id[1:], 16) if message_id.startswith("h") else int(message_id)


dump = subprocess.run([relay, "wal", "dump", "--data-dir", data], capture_output=True, text=True, check=True).stdout
in_log = {}
counts = {}
sequence_of = {}
for line in dump.splitlines():
    event = json.loads(line)
    i = number(event["messageId"])
    sequence_of[i] = event["seq"]
    in_log[i] = in_log.get(i, 0) + 1
    key = (event["deliveryId"], event["action"])
    counts[key] = counts.get(key, 0) + 1
stats = json.loads(subprocess.run([relay, "stats", "--json", "--data-dir", data], capture_output=True, text=True, check=True).stdout)
counted = {}
for row in stats["deliveries"]:
    for action, field in (("impression", "impressions"), ("open", "opens"), ("click", "clicks")):
        if row.get(field, 0):
            counted[(row["deliveryId"], action)] = row[field]
verify = subprocess.run([relay, "wal", "verify", "--json", "--data-dir", data], capture_output=True, text=True)
received = {}
for message in hits.get("messages", []):
    received[int(message["messageId"], 16)] = received.get(int(message["messageId"], 16), 0) + message["count"]

lost = [i for i in acknowledged if i not in in_log]
twice_in_log = [i for i, n in in_log.items() if n > 1]
invented = [i for i in in_log if i not in attempted]
not_forwarded = [i for i in in_log if i not in received]
forwarded_duplicates = sum(n - 1 for n in received.values())
# Sequence ranges of the log that never reached the emulator (where to look when it happens).
missing_ranges = []
for sequence in sorted(sequence_of[i] for i in not_forwarded):
    if missing_ranges and sequence == missing_ranges[-1][1] + 1:
        missing_ranges[-1][1] = sequence
    else:
        missing_ranges.append([sequence, sequence])
checks = {
    "every acknowledged id in the log": not lost,
    "no id twice in the log": not twice_in_log,
    "nothing invented": not invented,
    "log holds exactly the stored sequence count": len(in_log) == stored,
    "stats --json equals the log": counted == counts,
    "every logged event forwarded": not not_forwarded and set(received) == set(in_log),
    "forwarded duplicates within kills x --max-unsynced": forwarded_duplicates <= cycles * max_unsynced,
    "wal verify clean": verify.returncode == 0,
}
figures = {
    "seed": seed, "cycles": cycles, "killsWithRequestsUnderWay": killed_with_requests, "eventsAcknowledged": len(acknowledged),
    "eventsAttempted": len(attempted), "failedRequests": failures[0], "eventsInLog": len(in_log), "lost": len(lost),
    "duplicatesInLog": len(twice_in_log), "invented": len(invented), "forwarded": len(received), "notForwarded": len(not_forwarded), "notForwardedSequenceRanges": missing_ranges[:20],
    "forwardedDuplicates": forwarded_duplicates, "forwardedDuplicateBound": cycles * max_unsynced,
    "loadSeconds": round(load_seconds, 1), "drainSeconds": round(drain_seconds, 1), "seconds": round(time.monotonic() - started, 1),
    "checks": checks, "ok": all(checks.values()),
}
if as_json:
    print(json.dumps(figures, sort_keys=True))
else:
    print("| kill -9 soak (seed %d) | figure |" % seed)
    print("|---|---|")
    for name in ("cycles", "killsWithRequestsUnderWay", "eventsAcknowledged", "eventsAttempted", "failedRequests", "eventsInLog", "lost",
                 "duplicatesInLog", "invented", "forwarded", "notForwarded", "forwardedDuplicates", "forwardedDuplicateBound", "loadSeconds",
                 "drainSeconds", "seconds"):
        print("| %s | %s |" % (name, figures[name]))
    for name, ok in checks.items():
        print("%s: %s" % ("ok" if ok else "FAILED", name))
    if not verify.returncode == 0:
        print(verify.stdout, verify.stderr)
sys.exit(0 if figures["ok"] else 1)
