-- wrk script: POST /v1/events with a JSON array of 100 tracking events whose message ids are never
-- repeated in a run (each request takes the next 100), as in the Fluent Bit comparison of
-- BENCHMARKS.md: unique ids make the aggregator insert every one into its distinct-message table,
-- where a repeated body would only hit rows it already has. Deliveries cycle over 200.
-- MESSAGE_BASE (environment, default 1000000000) separates the ids of several runs on one log.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local next_id = tonumber(os.getenv("MESSAGE_BASE") or "1000000000")
local actions = { "impression", "open", "click" }
local parts = {}
request = function()
  for i = 1, 100 do
    local id = next_id + i
    parts[i] = '{"kind":"track","action":"' .. actions[id % 3 + 1] .. '","messageId":"' .. id ..
      '","deliveryId":"f' .. (4096 + id % 200) .. '"}'
  end
  next_id = next_id + 100
  return wrk.format(nil, nil, nil, "[" .. table.concat(parts, ",") .. "]")
end
