#!/usr/bin/env python3
"""Peers that reset TCP connections (RST, through SO_LINGER 0) in the middle of an HTTP message.

half-body PORT COUNT
    COUNT times: a POST /v1/events whose head announces a body, half of that body (events with
    ids from 900000000 up, which must never be stored), then a reset. Prints {"resets": COUNT}.

proxy TARGET_HOST TARGET_PORT EVERY
    A TCP forwarder on 127.0.0.1 (a free port, printed as "listening PORT") to the target, which
    passes requests whole and, every EVERY-th chunk of answer bytes, passes only the first half of
    the chunk and then resets the client's connection (and closes its own to the target): a next
    hop that took the request and died in the middle of its answer. Prints "reset N" at each reset.
"""
import json, os, select, signal, socket, struct, sys, threading, time

LINGER_ZERO = struct.pack("ii", 1, 0)
# The test process may hand down SIGTERM blocked: stop on it all the same.
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
signal.signal(signal.SIGTERM, lambda *_: os._exit(0))


def reset(sock):
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_ZERO)
        sock.close()
    except OSError:
        pass


def half_body(port, count):
    for n in range(count):
        ids = range(900_000_000 + n * 10, 900_000_000 + n * 10 + 10)
        body = "\n".join('{"kind":"track","action":"impression","messageId":"%d","deliveryId":"reset"}' % i for i in ids).encode()
        sock = socket.create_connection(("127.0.0.1", port))
        head = "POST /v1/events HTTP/1.1\r\nHost: relay\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n" % len(body)
        sock.sendall(head.encode() + body[: len(body) // 2])
        time.sleep(0.01)
        reset(sock)
    print(json.dumps({"resets": count}), flush=True)


def proxy(target_host, target_port, every):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(512)
    print("listening %d" % listener.getsockname()[1], flush=True)
    lock = threading.Lock()
    chunks = [0]
    resets = [0]

    def connection(client, upstream):
        """Both directions on one thread: a socket closed with a reset must not be held open by a
        second thread blocked in recv() on it (the reset would wait for that recv to return)."""
        sockets = [client, upstream]
        try:
            while True:
                readable, _, _ = select.select(sockets, [], [])
                for sock in readable:
                    data = sock.recv(65536)
                    if sock is client:
                        if data:
                            upstream.sendall(data)
                        else:
                            upstream.shutdown(socket.SHUT_WR)
                            sockets.remove(client)
                        continue
                    if not data:
                        client.shutdown(socket.SHUT_WR)
                        return
                    with lock:
                        chunks[0] += 1
                        cut = chunks[0] % every == 0
                        if cut:
                            resets[0] += 1
                            number = resets[0]
                    if cut:
                        client.sendall(data[: max(1, len(data) // 2)])
                        reset(client)
                        upstream.close()
                        print("reset %d" % number, flush=True)
                        return
                    client.sendall(data)
        except OSError:
            reset(client)
            upstream.close()

    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection((target_host, target_port))
        except OSError:
            reset(client)
            continue
        threading.Thread(target=connection, args=(client, upstream), daemon=True).start()


if sys.argv[1] == "half-body":
    half_body(int(sys.argv[2]), int(sys.argv[3]))
else:
    proxy(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
