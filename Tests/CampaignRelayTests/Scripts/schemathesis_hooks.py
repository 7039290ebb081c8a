"""Schemathesis hooks for the run against `serve` (OpenAPITests): how to generate the one request
body schemathesis cannot build from a schema, the relay-to-relay batch (binary, docs/relay-protocol.md).
Loaded through SCHEMATHESIS_HOOKS=schemathesis_hooks with this directory on PYTHONPATH."""
import schemathesis
from hypothesis import strategies as st

schemathesis.openapi.media_type("application/x-campaign-relay-batch", st.binary(max_size=4096))
