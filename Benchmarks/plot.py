#!/usr/bin/env python3
"""Renders BENCHMARKS.md's figures from a results CSV (Benchmarks/results/DATE.csv):
durable events/s and bytes per event against batch size (WAL vs SQLite), and recovery time
against the active segment's size. Needs matplotlib (pip install matplotlib).
Usage: plot.py results/2026-11-22.csv benchmarks.png"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

rows = list(csv.DictReader(open(sys.argv[1])))
def series(name, column):
    points = [(float(r["x"]), float(r[column])) for r in rows if r["series"] == name and r[column]]
    return [p[0] for p in points], [p[1] for p in points]

figure, (throughput, size, recovery) = plt.subplots(1, 3, figsize=(15, 4.5))
for name, label in (("wal", "campaign-relay WAL"), ("sqlite", "SQLite WAL, synchronous=FULL")):
    x, y = series(name, "events_per_second")
    throughput.plot(x, y, marker="o", label=label)
    x, y = series(name, "bytes_per_event")
    size.plot(x, y, marker="o", label=label)
throughput.set(xscale="log", yscale="log", xlabel="events per durable append", ylabel="events/s", title="Durable append throughput")
size.set(xscale="log", xlabel="events per durable append", ylabel="bytes per event on disk", title="Bytes per event")
size.axhline(40, color="grey", linestyle="--", linewidth=1, label="aim: 40 B/event")
x, y = series("recovery", "p50_ms")
recovery.plot(x, y, marker="o", label="open + verify (p50)")
recovery.plot([0, 64], [200, 200 + 1000 * 64 / 1024], color="grey", linestyle="--", linewidth=1, label="aim: 200 ms + 1 s/GiB")
recovery.set(xlabel="active segment (MiB)", ylabel="ms", title="Recovery time on open")
for axes in (throughput, size, recovery):
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
figure.tight_layout()
figure.savefig(sys.argv[2], dpi=110)
