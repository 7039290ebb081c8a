"""Client certificates against `serve --tls-client-ca`, with Python's ssl, for TLSTests.swift.

Usage: mtls_client.py PORT CA_PEM CLIENT_CERT CLIENT_KEY
"""
import http.client
import json
import ssl
import sys

port, ca, client_cert, client_key = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
result = {}
for name, with_certificate in (("without", False), ("with", True)):
    context = ssl.create_default_context(cafile=ca)
    if with_certificate:
        context.load_cert_chain(client_cert, client_key)
    try:
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
        connection.request("GET", "/healthz")
        result[name] = connection.getresponse().status
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError, OSError) as error:
        result[name] = type(error).__name__
print(json.dumps(result))
