#!/usr/bin/env bash
# Durable single hits (GET /r/?id=h…) over TLS against plain HTTP, same build, same run, with wrk:
# two `campaign-relay serve` (release, aggregator on, no forwarding), one plain and one with
# --tls-cert/--tls-key (a test certificate made here with openssl). Each is measured twice,
# alternately, with keep-alive connections and with a new connection per request (each a full
# TLS handshake, as an SDK whose connection was not kept). Prints the requests/s and the TLS/plain
# ratios.
# Usage: Benchmarks/tls-hits.sh [SECONDS=10] [CONNECTIONS=16]
set -euo pipefail
source "$(dirname "$0")/common.sh"
seconds=${1:-10}
connections=${2:-16}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
command -v openssl >/dev/null || { echo "openssl is needed: apt-get install openssl" >&2; exit 1; }

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
"$relay" serve --bind 127.0.0.1:18092 --data-dir "$work/plain" --log-level warning &
pids+=($!)
"$relay" serve --bind 127.0.0.1:18093 --data-dir "$work/tls" --log-level warning --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" &
pids+=($!)
for port in 18092 18093; do
    for _ in $(seq 100); do curl -sk -o /dev/null "http${port/18093/s}://127.0.0.1:$port/healthz" 2>/dev/null && break; sleep 0.1; done
done
[ "$(curl -sk -o /dev/null -w '%{http_code}' https://127.0.0.1:18093/healthz)" = 200 ] || { echo "the TLS relay did not start" >&2; exit 1; }

rate() { # name url [wrk args…] -> requests/s
    local name=$1 url=$2; shift 2
    wrk -t1 -c"$connections" -d"${seconds}s" --latency "$@" "$url" > "$work/$name.txt"
    echo "## $name" >&2
    cat "$work/$name.txt" >&2
    python3 -c "import re,sys; print(re.search(r'Requests/sec:\s+([\d.]+)', open(sys.argv[1]).read()).group(1))" "$work/$name.txt"
}
declare -A total
for round in 1 2; do
    for mode in keepalive close; do
        extra=()
        [ "$mode" = close ] && extra=(-H "Connection: close")
        for scheme in plain tls; do
            port=18092; url_scheme=http
            [ "$scheme" = tls ] && { port=18093; url_scheme=https; }
            value=$(rate "$scheme-$mode-$round" "$url_scheme://127.0.0.1:$port/r/?id=hd828,f0190,1" "${extra[@]}")
            total[$scheme-$mode]=$(python3 -c "print(${total[$scheme-$mode]:-0} + $value)")
        done
    done
done
echo
printf '%-28s %12s %12s %8s\n' "durable GET /r/ hits" "plain req/s" "TLS req/s" "TLS/plain"
for mode in keepalive close; do
    python3 -c "
plain, tls = ${total[plain-$mode]} / 2, ${total[tls-$mode]} / 2
label = {'keepalive': 'keep-alive connections', 'close': 'new connection per request'}['$mode']
print('%-28s %12.0f %12.0f %8.2f' % (label, plain, tls, tls / plain if plain else 0))"
done
