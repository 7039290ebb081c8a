-- wrk script: each connection waits PACE_MS milliseconds (environment, default 5) after every
-- answer before its next request, so the offered rate is about connections × 1000 / (PACE_MS +
-- latency) instead of as fast as the server answers. Prints the achieved rate and the latency
-- percentiles wrk's own report leaves out (p99.9).
local interval = tonumber(os.getenv("PACE_MS") or "5")
function delay() return interval end
done = function(summary, latency, requests)
  local errors = summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format("PACED %.0f req/s p50 %.3f ms p99 %.3f ms p99.9 %.3f ms max %.3f ms errors %d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000, errors))
end
