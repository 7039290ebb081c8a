"""A TLS client the relay did not write (Python's ssl), for TLSTests.swift.

Usage: tls_client.py PORT CA_PEM SERVER_PID CURRENT_CERT CURRENT_KEY NEXT_CERT NEXT_KEY
Prints one JSON object with what it saw; the Swift test asserts on it.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import sys
import time

port, ca, pid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
current_cert, current_key, next_cert, next_key = sys.argv[4:8]
context = ssl.create_default_context(cafile=ca)
result = {}


def request(method, path, body=None, headers=None, tls=context):
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=tls, timeout=10)
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    answer = (response.status, response.read().decode())
    connection.close()
    return answer


def served_common_name():
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            subject = dict(pair[0] for pair in tls.getpeercert()["subject"])
            return subject["commonName"], tls.version()


result["healthz"] = request("GET", "/healthz")[0]
form = "registrationToken=tls-token&mobileAppUuid=key&userKey=u"
result["registration"] = request("POST", "/nms/mobile/1/registerIOS.jssp", form, {"Content-Type": "application/x-www-form-urlencoded;charset=UTF-8"})[0]
result["hit"] = request("GET", "/r/?id=h05,tls,1")[0]
result["before"], result["version"] = served_common_name()
tls12 = ssl.create_default_context(cafile=ca)
tls12.maximum_version = ssl.TLSVersion.TLSv1_2
result["tls12"] = request("GET", "/healthz", tls=tls12)[0]

# Plain HTTP on the TLS port.
with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
    raw.sendall(b"GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n")
    try:
        result["plain"] = raw.recv(100).decode("latin-1")
    except (ConnectionResetError, socket.timeout) as error:
        result["plain"] = type(error).__name__

# A request under way across the reload: headers and half the body, then SIGHUP, then the rest.
body = b'[{"kind":"track","action":"open","messageId":"7","deliveryId":"tls"}]'
slow = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=20), server_hostname="127.0.0.1")
slow.sendall(b"POST /v1/events HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
slow.sendall(body[:20])
shutil.copyfile(next_cert, current_cert)
shutil.copyfile(next_key, current_key)
os.kill(pid, signal.SIGHUP)
deadline = time.time() + 15
result["after"] = result["before"]
while time.time() < deadline and result["after"] == result["before"]:
    time.sleep(0.05)
    result["after"] = served_common_name()[0]
slow.sendall(body[20:])
answer = slow.recv(4096).decode()
result["acrossReload"] = answer.split("\r\n", 1)[0]
slow.close()
print(json.dumps(result))
