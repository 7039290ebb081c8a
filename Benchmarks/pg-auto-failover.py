#!/usr/bin/env python3
"""The driver of Benchmarks/pg-auto-failover.sh: three `campaign-relay serve --log-postgres-url` on a
live pg_auto_failover formation (a monitor and two PostgreSQL nodes from Debian's
postgresql-15-auto-failover, on loopback ports), loaded by three clients, one per relay, while the
primary's keeper and PostgreSQL are killed with SIGKILL. pg_auto_failover promotes the standby; the
relays, on the formation's multi-host URL, answer 503 meanwhile and 200 again without a restart.

At the end, from outside the relays: every id a relay answered 200 for is in the promoted database
(`wal dump --log-postgres-url`) exactly once and reached the emulator, the fleet counts
(`stats --postgres-url`) equal the stored events, and the duplicates sent to the emulator are
printed. Prints the figures (a table, or one JSON object with --json); exit status 1 if a check
failed.

With `--kill standby`, the standby is killed instead: the primary's commits wait for it until the
monitor stops naming it in `synchronous_standby_names` (about 20 s with its defaults).

Needs root (the clusters run as `postgres`, through runuser).
Usage: pg-auto-failover.py RELAY WORK [--json] [--kill primary|standby] [--seconds-before N] [--seconds-after N]"""
import atexit, http.client, json, os, pwd, re, signal, socket, subprocess, sys, threading, time, urllib.request

relay, work = sys.argv[1], sys.argv[2]
as_json = "--json" in sys.argv
before_kill = float(sys.argv[sys.argv.index("--seconds-before") + 1]) if "--seconds-before" in sys.argv else 10
after_back = float(sys.argv[sys.argv.index("--seconds-after") + 1]) if "--seconds-after" in sys.argv else 10
victim_role = sys.argv[sys.argv.index("--kill") + 1] if "--kill" in sys.argv else "primary"
if victim_role not in ("primary", "standby"):
    raise SystemExit("--kill takes primary or standby")
victim, survivor = ("node1", "node2") if victim_role == "primary" else ("node2", "node1")
started = time.monotonic()
postgres = pwd.getpwnam("postgres")
os.chown(work, postgres.pw_uid, postgres.pw_gid)


def log(text):
    print("[%6.1f s] %s" % (time.monotonic() - started, text), file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_postgres(arguments, **options):
    return subprocess.run(["runuser", "-u", "postgres", "--"] + arguments, capture_output=True, text=True, cwd=work, **options)


def get(url, timeout=30):
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return answer.status, answer.read().decode()


# Whatever happens to this driver, what it started does not outlive it: the relays and emulator,
# then each keeper (its process group) and the PostgreSQL it started.
children = []
keepers = {}


def postmaster(name):
    try:
        with open(os.path.join(work, name, "postmaster.pid")) as pid_file:
            return int(pid_file.readline())
    except (OSError, ValueError):
        return None


def kill_node(name):
    keeper = keepers.get(name)
    if keeper is not None and keeper.poll() is None:
        os.killpg(keeper.pid, signal.SIGKILL)
        keeper.wait()
    pid = postmaster(name)
    if pid is not None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@atexit.register
def stop_everything():
    for child in children:
        if child.poll() is None:
            child.kill()
            child.wait()
    for name in list(keepers):
        kill_node(name)
    # pg_autoctl keeps each node's state under the postgres user's home, by the data directory's
    # path: gone with the scratch directory.
    for kept in (".config/pg_autoctl", ".local/share/pg_autoctl"):
        subprocess.run(["rm", "-rf", os.path.join(postgres.pw_dir, kept) + os.path.abspath(work)])


ports = {"monitor": free_port(), "node1": free_port(), "node2": free_port()}
monitor_uri = "postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable" % ports["monitor"]


def keeper(name):
    """`pg_autoctl run` of `name`, in a process group of its own (the kill takes it whole)."""
    output = open(os.path.join(work, name + ".log"), "ab")
    process = subprocess.Popen(["runuser", "-u", "postgres", "--", "pg_autoctl", "run", "--pgdata", os.path.join(work, name)],
                               stdout=output, stderr=output, cwd=work, start_new_session=True)
    keepers[name] = process


def create(arguments, what):
    outcome = as_postgres(arguments, env={**os.environ, "PG_AUTOCTL_DEBUG": "0"})
    if outcome.returncode != 0:
        raise SystemExit("%s failed (%d): %s%s" % (what, outcome.returncode, outcome.stdout, outcome.stderr[-3000:]))


pg_ctl = "/usr/lib/postgresql/15/bin/pg_ctl"
create(["pg_autoctl", "create", "monitor", "--pgdata", os.path.join(work, "monitor"), "--pgport", str(ports["monitor"]),
        "--pgctl", pg_ctl, "--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl"], "the monitor")
keeper("monitor")
for node in ("node1", "node2"):
    # One at a time: the first registered becomes the primary.
    create(["pg_autoctl", "create", "postgres", "--pgdata", os.path.join(work, node), "--pgport", str(ports[node]), "--pgctl", pg_ctl,
            "--hostname", "127.0.0.1", "--name", node, "--dbname", "relay", "--auth", "trust", "--no-ssl", "--monitor", monitor_uri],
           node)
    keeper(node)
    if node == "node1":
        deadline = time.monotonic() + 120
        while as_postgres(["psql", "-h", "127.0.0.1", "-p", str(ports["node1"]), "-d", "relay", "-Atc", "SELECT NOT pg_is_in_recovery()"]).stdout.strip() != "t":
            if time.monotonic() > deadline:
                raise SystemExit("node1 did not become a writable primary within 120 s")
            time.sleep(0.5)


def psql(port, sql):
    return as_postgres(["psql", "-h", "127.0.0.1", "-p", str(port), "-d", "relay", "-Atc", sql]).stdout.strip()


deadline = time.monotonic() + 180
while psql(ports["node1"], "SELECT sync_state FROM pg_stat_replication") != "quorum":
    if time.monotonic() > deadline:
        raise SystemExit("node2 did not become a synchronous standby within 180 s:\n"
                         + as_postgres(["pg_autoctl", "show", "state", "--pgdata", os.path.join(work, "monitor")]).stdout)
    time.sleep(0.5)
formation_seconds = time.monotonic() - started
state = as_postgres(["pg_autoctl", "show", "state", "--pgdata", os.path.join(work, "monitor")]).stdout
log("formation ready: node1 primary, node2 synchronous standby\n" + state)
url = "postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/relay?sslmode=disable&target_session_attrs=read-write" % (ports["node1"], ports["node2"])

emulator_port = free_port()
emulator = subprocess.Popen([relay, "emulate", "--bind", "127.0.0.1:%d" % emulator_port, "--log-level", "error"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
children.append(emulator)
campaign = "http://127.0.0.1:%d" % emulator_port
relays = []
for number in range(3):
    port = free_port()
    directory = os.path.join(work, "relay%d" % number)
    process = subprocess.Popen(
        [relay, "serve", "--bind", "127.0.0.1:%d" % port, "--data-dir", directory, "--log-postgres-url", url, "--postgres-url", url,
         "--relay-name", "relay%d" % number, "--tracking-host", campaign, "--marketing-host", campaign, "--backoff-cap", "1",
         "--log-level", "notice", "--log-format", "json"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "relay%d.log" % number), "ab"))
    children.append(process)
    relays.append((process, port))
for process, port in relays:
    deadline = time.monotonic() + 120
    while True:
        if process.poll() is not None:
            raise SystemExit("a relay exited with %d; see %s" % (process.returncode, work))
        try:
            if get("http://127.0.0.1:%d/readyz" % port, timeout=2)[0] == 200:
                break
        except Exception:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("a relay was not ready within 120 s")
        time.sleep(0.1)
log("three relays ready on %s" % url)

# What the clients sent and what the relays acknowledged, by message id; per relay, the times of
# its answers (monotonic), to find the window without a 200.
lock = threading.Lock()
acknowledged = {}  # id -> relay number
answers = {n: [] for n in range(3)}  # (time, status or None)
stopping = threading.Event()


def client(number):
    """Client n loads relay n: batches of 20 tracking hits (POST /v1/events), 10 ms apart; a request
    that fails is not retried (its events stay unacknowledged)."""
    port = relays[number][1]
    next_id = (number + 1) * 1_000_000_000
    connection = None
    while not stopping.is_set():
        ids = list(range(next_id, next_id + 20))
        next_id += len(ids)
        body = "\n".join(json.dumps({"kind": "track", "action": "open", "messageId": str(i), "deliveryId": "d%d" % number}) for i in ids)
        status = None
        try:
            if connection is None:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
            connection.request("POST", "/v1/events", body=body, headers={"Content-Type": "application/x-ndjson"})
            answer = connection.getresponse()
            answer.read()
            status = answer.status
        except Exception:
            connection = None
        now = time.monotonic()
        with lock:
            answers[number].append((now, status))
            if status == 200:
                for i in ids:
                    acknowledged[i] = number
        time.sleep(0.01 if status == 200 else 0.2)


threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(3)]
for thread in threads:
    thread.start()
time.sleep(before_kill)
with lock:
    acknowledged_before_kill = len(acknowledged)
killed_at = time.monotonic()
kill_node(victim)
log("%s (the %s: keeper and PostgreSQL) killed with SIGKILL; %d events acknowledged before" % (victim, victim_role, acknowledged_before_kill))

# Until every relay answered 200 again, then `after_back` seconds more of load.
deadline = killed_at + 600
back_at = None
while time.monotonic() < deadline:
    with lock:
        back = all(any(t > killed_at and s == 200 for t, s in answers[n][-50:]) for n in range(3))
    if back:
        back_at = time.monotonic()
        break
    time.sleep(0.2)
if back_at is None:
    log("the relays did not answer 200 again within 600 s")
else:
    log("every relay answers 200 again, %.1f s after the kill" % (back_at - killed_at))
    time.sleep(after_back)
stopping.set()
for thread in threads:
    thread.join()
state_after = as_postgres(["pg_autoctl", "show", "state", "--pgdata", os.path.join(work, "monitor")]).stdout
log("after the failover\n" + state_after)


def windows(number):
    """The longest time between two 200s of this relay's client, and the answers in between
    (`None`: no answer, the connection failed or timed out)."""
    rows = answers[number]
    longest, between = 0.0, {}
    last_ok, meanwhile = None, {}
    for t, s in rows:
        if s == 200:
            if last_ok is not None and t - last_ok > longest:
                longest, between = t - last_ok, dict(meanwhile)
            last_ok, meanwhile = t, {}
        else:
            meanwhile[str(s)] = meanwhile.get(str(s), 0) + 1
    return {"without200Seconds": round(longest, 1), "answersMeanwhile": between}


def received_counts():
    hits = json.loads(get(campaign + "/emulator/hits?messages=1", timeout=120)[1])
    counts = {}
    for message in hits.get("messages", []):
        # The wire's message id: hexadecimal (the emulator drops the SDK's leading `h`).
        i = int(message["messageId"].removeprefix("h"), 16)
        counts[i] = counts.get(i, 0) + message["count"]
    return counts


# Every acknowledged event must reach the emulator: wait for the relays' backlogs to drain (or for
# a minute without progress).
drain_started = time.monotonic()
last_missing, last_change = -1, time.monotonic()
while time.monotonic() - drain_started < 600:
    received = received_counts()
    missing = sum(1 for i in acknowledged if i not in received)
    if missing == 0:
        break
    if missing != last_missing:
        last_missing, last_change = missing, time.monotonic()
    elif time.monotonic() - last_change > 60:
        log("%d acknowledged events have not reached the emulator in a minute" % missing)
        break
    time.sleep(2)
received = received_counts()

in_log = {}
for number in range(3):
    dump = subprocess.run([relay, "wal", "dump", "--log-postgres-url", url, "--relay-name", "relay%d" % number],
                          capture_output=True, text=True, timeout=300)
    if dump.returncode != 0:
        raise SystemExit("wal dump of relay%d failed: %s" % (number, dump.stderr))
    for line in dump.stdout.splitlines():
        event = json.loads(line)
        i = int(event["messageId"])
        in_log[i] = in_log.get(i, 0) + 1
stats = json.loads(subprocess.run([relay, "stats", "--postgres-url", url, "--json"], capture_output=True, text=True, check=True,
                                  timeout=120).stdout)
counted = sum(row.get("opens", 0) for row in stats["deliveries"])
copies = psql(ports[survivor], "SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')")
for process, _ in relays:
    process.send_signal(signal.SIGTERM)
for process, _ in relays:
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()

lost = [i for i in acknowledged if i not in in_log]
twice_in_log = [i for i, n in in_log.items() if n > 1]
not_forwarded = [i for i in acknowledged if i not in received]
duplicates = sum(n - 1 for n in received.values())
checks = {
    "every acknowledged id in the database left": not lost,
    "no id twice in the log": not twice_in_log,
    "every acknowledged id reached the emulator": not not_forwarded,
    "the relays answered 200 again without a restart": back_at is not None,
    "stats --postgres-url counts every stored event once": counted == len(in_log),
}
figures = {
    "killed": victim_role, "formationSeconds": round(formation_seconds, 1),
    "eventsAcknowledged": len(acknowledged), "acknowledgedBeforeKill": acknowledged_before_kill, "eventsInLog": len(in_log),
    "storedButNotAcknowledged": len(set(in_log) - set(acknowledged)), "lost": len(lost), "duplicatesInLog": len(twice_in_log),
    "forwardedDistinct": len(received), "forwardedDuplicates": duplicates, "counted": counted,
    "allAnswer200AgainSeconds": round(back_at - killed_at, 1) if back_at else None,
    "relays": {"relay%d" % n: windows(n) for n in range(3)},
    "synchronousStandbysAfter": int(copies or 0), "stateAfter": state_after.strip().splitlines(),
    "seconds": round(time.monotonic() - started, 1), "checks": checks, "ok": all(checks.values()),
}
if as_json:
    print(json.dumps(figures, sort_keys=True))
else:
    print("| pg_auto_failover, %s killed | figure |" % victim_role)
    print("|---|---|")
    for name in ("formationSeconds", "eventsAcknowledged", "acknowledgedBeforeKill", "eventsInLog", "storedButNotAcknowledged", "lost",
                 "duplicatesInLog", "forwardedDistinct", "forwardedDuplicates", "counted", "allAnswer200AgainSeconds",
                 "synchronousStandbysAfter", "seconds"):
        print("| %s | %s |" % (name, figures[name]))
    for name, window in figures["relays"].items():
        print("| %s without a 200 | %s s (meanwhile %s) |" % (name, window["without200Seconds"], window["answersMeanwhile"]))
    for name, ok in checks.items():
        print("%s: %s" % ("ok" if ok else "FAILED", name))
sys.exit(0 if figures["ok"] else 1)
