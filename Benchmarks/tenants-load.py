#!/usr/bin/env python3
"""Open-loop SDK hits for Benchmarks/tenants.sh: GET /{tenant}/r/?id=h{id},{delivery},1 at a fixed
rate per tenant, each hit with a message id of its own, and the moment each 200 came back.

The schedule is fixed in advance (hit i of a tenant is due at start + i / rate), whatever the
answers take: a slow answer holds one connection, the next due hit goes out on another one
(opened when none is free, up to --connections per tenant), so the rate offered never follows the
relay's latency. Standard library only (asyncio streams, HTTP/1.1 keep-alive).

Writes one JSON object to --out: per tenant the acknowledgements {message id: ack time}, with
times as seconds since the Unix epoch (time.time(), the clock the emulator records its requests
with), the statuses that were not 200, the errors, and how late the sender ran behind its schedule.

Usage: tenants-load.py --url http://127.0.0.1:PORT --tenant t-a --tenant t-b --rate 500
       --seconds 60 --out FILE [--base 0x10000000] [--connections 64]
"""
import argparse
import asyncio
import json
import sys
import time


class Connection:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    async def get(self, host, path):
        self.writer.write(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, host)).encode())
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("closed by the server")
        status = int(status_line.split()[1])
        length, close = 0, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value.strip())
            elif name == "connection" and value.strip().lower() == "close":
                close = True
        if length:
            await self.reader.readexactly(length)
        return status, close

    def close(self):
        self.writer.close()


async def run_tenant(args, tenant, base, start, result):
    host_port = args.url.split("://", 1)[1].rstrip("/")
    host, port = host_port.rsplit(":", 1)
    idle = []
    opened = 0
    total = int(args.rate * args.seconds)
    acks, statuses, errors = result["acks"], result["statuses"], result["errors"]
    lateness = []
    in_flight = set()
    free = asyncio.Condition()

    async def send(index, connection):
        nonlocal opened
        message = "%x" % (base + index)
        path = "/%s/r/?id=h%s,f%d,1" % (tenant, message, 4096 + index % 200)
        try:
            if connection is None:
                reader, writer = await asyncio.open_connection(host, int(port))
                connection = Connection(reader, writer)
            status, close = await connection.get(host_port, path)
            now = time.time()
            if status == 200:
                acks[message] = now
            else:
                statuses[str(status)] = statuses.get(str(status), 0) + 1
            if close:
                connection.close()
                connection = None
        except (OSError, ConnectionError, ValueError, asyncio.IncompleteReadError) as error:
            errors.append("%s: %s" % (type(error).__name__, error))
            if connection is not None:
                connection.close()
            connection = None
        async with free:
            if connection is None:
                opened -= 1
            else:
                idle.append(connection)
            free.notify()

    for index in range(total):
        due = start + index / args.rate
        delay = due - time.time()
        if delay > 0:
            await asyncio.sleep(delay)
        lateness.append(max(0.0, time.time() - due))
        async with free:
            while not idle and opened >= args.connections:
                await free.wait()
            if idle:
                connection = idle.pop()
            else:
                connection = None
                opened += 1
        task = asyncio.create_task(send(index, connection))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
    if in_flight:
        await asyncio.gather(*list(in_flight))
    for connection in idle:
        connection.close()
    lateness.sort()
    result["sent"] = total
    result["scheduleLatenessP99Milliseconds"] = round(lateness[int(len(lateness) * 0.99)] * 1000, 2) if lateness else None
    result["scheduleLatenessMaxMilliseconds"] = round(lateness[-1] * 1000, 2) if lateness else None


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--tenant", action="append", required=True)
    parser.add_argument("--rate", type=float, default=500)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--base", type=lambda text: int(text, 0), default=0x10000000)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    start = time.time() + 0.2
    results = {tenant: {"acks": {}, "statuses": {}, "errors": []} for tenant in args.tenant}
    # Each tenant's ids in a range of their own: 2^24 ids apart.
    await asyncio.gather(*(run_tenant(args, tenant, args.base + number * (1 << 24), start, results[tenant])
                           for number, tenant in enumerate(args.tenant)))
    results = {"start": start, "end": time.time(), "rate": args.rate, "seconds": args.seconds, "tenants": results}
    for tenant, result in results["tenants"].items():
        print("load %s: %d sent, %d acknowledged, statuses %s, %d errors, schedule lateness p99 %s ms" % (
            tenant, result["sent"], len(result["acks"]), result["statuses"], len(result["errors"]),
            result["scheduleLatenessP99Milliseconds"]), file=sys.stderr)
        result["errors"] = result["errors"][:20]
    with open(args.out, "w") as out:
        json.dump(results, out)


if __name__ == "__main__":
    asyncio.run(main())
