-- wrk script: POST /{tenant}/v1/events with a JSON array of 100 tracking events whose message ids
-- are never repeated in a run, as array100-unique.lua, the tenant chosen per request: round-robin
-- over t0 … t{TENANTS-1} (environment, default 10). TENANTS=1 sends every request to /t0/v1/events
-- through the same code, so the two cases differ only in the tenants they name.
-- MESSAGE_BASE (environment, default 1000000000) separates the ids of several runs on one log.
-- DELIVERIES (environment, default 200): how many (tenant, delivery id) pairs the events cycle
-- over, split evenly among the tenants (each its own ids), so that one tenant and ten count the
-- same number of deliveries: the same delivery id under two tenants is two deliveries.
-- Give wrk the server's origin (http://host:port): the path is built here.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local next_id = tonumber(os.getenv("MESSAGE_BASE") or "1000000000")
local tenants = tonumber(os.getenv("TENANTS") or "10")
local deliveries = tonumber(os.getenv("DELIVERIES") or "200")
local per_tenant = math.max(1, math.floor(deliveries / tenants))
local paths = {}
for t = 0, tenants - 1 do paths[t + 1] = "/t" .. t .. "/v1/events" end
local turn = 0
local actions = { "impression", "open", "click" }
local parts = {}
request = function()
  turn = turn % tenants + 1
  local first_delivery = 4096 + (turn - 1) * per_tenant
  for i = 1, 100 do
    local id = next_id + i
    parts[i] = '{"kind":"track","action":"' .. actions[id % 3 + 1] .. '","messageId":"' .. id ..
      '","deliveryId":"f' .. (first_delivery + id % per_tenant) .. '"}'
  end
  next_id = next_id + 100
  return wrk.format(nil, paths[turn], nil, "[" .. table.concat(parts, ",") .. "]")
end
