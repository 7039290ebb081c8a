#!/usr/bin/env python3
"""Writes N tracking events as JSONL, the same file for the same N (seed 7): the input of the
benchmark scripts. Usage: generate-events.py N PATH [SEED=7] (another seed: another relay's events)"""
import random
import sys

count, path = int(sys.argv[1]), sys.argv[2]
random.seed(int(sys.argv[3]) if len(sys.argv) > 3 else 7)
actions = ["impression"] * 6 + ["open"] * 3 + ["click"]
with open(path, "w") as f:
    for i in range(count):
        f.write('{"kind":"track","action":"%s","messageId":"%d","deliveryId":"f%04x","time":"2026-11-21T%02d:%02d:%02d.%03dZ"}\n'
                % (random.choice(actions), random.randrange(1, 10**9), 0x1000 + random.randrange(200),
                   (i // 3600000) % 24, (i // 60000) % 60, (i // 1000) % 60, i % 1000))
