-- wrk's script for bench.server.compare (bench/server/light.py runs it): each request is
-- POST /v1/query with the analyst's token and a DP-SELECT at an ε no other request of the run used;
-- each answer is checked to be a 200 with a JSON answer charged exactly that ε (not from privdb's store).
--
-- Arguments (after `--` on wrk's command line): TOKEN FIRST TEMPLATE, where request k of thread t
-- (t = 0, 1, …) asks ε = 1 + (FIRST + t·BLOCK + k)·1e-9 and TEMPLATE is the query with `%s` for ε.
-- An answer is matched to its request by the ε it was charged (wrk may ask request() for more requests
-- than it sends, so the order of requests and answers is not relied on).

local BLOCK = 1000000 -- requests a thread may send in one run
local STEP = 1e-9
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

local token, template, base
local pending = {} -- request numbers sent and not yet answered
local k = 0
ok, bad, stale = 0, 0, 0 -- read by done() through thread:get
statuses = "" -- the status codes of refusals and how often, e.g. "401×3"
local codes = {}

local function quote(s)
  return (s:gsub('\\', '\\\\'):gsub('"', '\\"'))
end

function init(args)
  token, template = args[1], args[3]
  base = tonumber(args[2]) + id * BLOCK
end

local function refused(what)
  bad = bad + 1
  codes[what] = (codes[what] or 0) + 1
  local parts = {}
  for code, n in pairs(codes) do
    table.insert(parts, code .. "×" .. n)
  end
  statuses = table.concat(parts, " ")
end

function request()
  local i = base + k
  k = k + 1
  pending[i] = true
  local sql = string.format(template, string.format("%.9f", 1 + i * STEP))
  local body = '{"sql":"' .. quote(sql) .. '"}'
  local headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }
  return wrk.format("POST", "/v1/query", headers, body)
end

function response(status, headers, body)
  if status ~= 200 then
    return refused(tostring(status))
  end
  local spent = tonumber(body:match('^{.*"epsilon_spent":%s*([-%d.eE+]+)') or "")
  if spent == nil then
    return refused("200-without-an-answer")
  end
  local i = math.floor((spent - 1) / STEP + 0.5)
  local epsilon = 1 + i * STEP
  if pending[i] and not body:find('"cached":%s*true') and math.abs(spent - epsilon) <= 1e-12 * epsilon then
    pending[i] = nil
    ok = ok + 1
  else
    stale = stale + 1 -- from privdb's store, or charged an ε this thread did not ask for
  end
end

function done(summary, latency, requests)
  local answered, refusals, cached, kinds = 0, 0, 0, ""
  for _, thread in ipairs(threads) do
    answered = answered + thread:get("ok")
    refusals = refusals + thread:get("bad")
    cached = cached + thread:get("stale")
    kinds = kinds .. " " .. thread:get("statuses")
  end
  local e = summary.errors
  io.write(string.format(
    'RESULT {"answered": %d, "refused": %d, "stale": %d, "statuses": "%s", "requests": %d, '
      .. '"seconds": %.6f, "socket_errors": %d, "p50_ms": %.3f, "p99_ms": %.3f}\n',
    answered, refusals, cached, kinds, summary.requests, summary.duration / 1e6,
    e.connect + e.read + e.write + e.timeout, latency:percentile(50) / 1000, latency:percentile(99) / 1000
  ))
end
