#!/usr/bin/env python3
"""Delays every packet netfilter queues to it (iptables -j NFQUEUE --queue-num QUEUE) by DELAY_MS
before accepting it: netem's `delay`, for kernels built without sch_netem. Speaks nfnetlink_queue
directly (no library): binds the queue in the network namespace it runs in, copies only the packet
metadata, and gives each packet its ACCEPT verdict DELAY_MS after it arrived, in arrival order.
Prints "ready" once bound, then runs until killed. Usage: netfilter_delay.py QUEUE DELAY_MS"""
import collections, os, signal, socket, struct, sys, threading, time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS = 1, 2
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NF_ACCEPT = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2

# The test process may hand down SIGTERM blocked: stop on it all the same.
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
queue, delay = int(sys.argv[1]), float(sys.argv[2]) / 1000
sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
sock.bind((0, 0))
sequence = [0]
send_lock = threading.Lock()


def attribute(kind, payload):
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * ((4 - length % 4) % 4)


def message(kind, flags, family, payload):
    sequence[0] += 1
    body = struct.pack("=BBH", family, 0, socket.htons(queue)) + payload
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | kind, flags, sequence[0], 0) + body


def configure(payload):
    sock.send(message(NFQNL_MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK, socket.AF_UNSPEC, payload))
    answer = sock.recv(65536)
    _, kind, _, _, _ = struct.unpack_from("=IHHII", answer)
    if kind == NLMSG_ERROR and struct.unpack_from("=i", answer, 16)[0] != 0:
        raise SystemExit("nfnetlink_queue refused the configuration: errno %d" % -struct.unpack_from("=i", answer, 16)[0])


configure(attribute(NFQA_CFG_CMD, struct.pack("=BBH", NFQNL_CFG_CMD_BIND, 0, socket.htons(socket.AF_INET))))
configure(attribute(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META)))
print("ready", flush=True)

pending = collections.deque()  # (release time, packet id)
ready = threading.Condition()


def release():
    while True:
        with ready:
            while not pending:
                ready.wait()
            due, packet = pending[0]
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        with ready:
            pending.popleft()
        verdict = attribute(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, packet))
        with send_lock:
            sock.send(message(NFQNL_MSG_VERDICT, NLM_F_REQUEST, socket.AF_UNSPEC, verdict))


threading.Thread(target=release, daemon=True).start()
while True:
    data = sock.recv(1 << 20)
    offset = 0
    while offset + 16 <= len(data):
        length, kind, _, _, _ = struct.unpack_from("=IHHII", data, offset)
        if length < 16:
            break
        if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            position = offset + 20  # after nlmsghdr and nfgenmsg
            while position + 4 <= offset + length:
                size, attribute_kind = struct.unpack_from("=HH", data, position)
                if size < 4:
                    break
                if attribute_kind & 0x7FFF == NFQA_PACKET_HDR:
                    packet = struct.unpack_from("!I", data, position + 4)[0]
                    with ready:
                        pending.append((time.monotonic() + delay, packet))
                        ready.notify()
                    break
                position += (size + 3) & ~3
        offset += (length + 3) & ~3
