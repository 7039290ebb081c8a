-- wrk script: GET /r/?id=h…,f…,1 with a message id never repeated in a run (deliveries cycle over
-- 200), as the uploader drains a backlog of distinct hits: the emulator then keeps every id in its
-- set of distinct hits, as it does during the drain.
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", string.format("/r/?id=h%x,f%d,1", 1000000 + n, 4096 + n % 200))
end
