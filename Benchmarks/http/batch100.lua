-- wrk script: POST /v1/events with 100 tracking events as NDJSON (one durable batch per request).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-ndjson"
local lines = {}
for i = 1, 100 do
  lines[i] = string.format('{"kind":"track","action":"impression","messageId":"%d","deliveryId":"f%04x"}', 1000000 + i, 4096 + (i % 200))
end
wrk.body = table.concat(lines, "\n")
