-- wrk: POST with a new Idempotency-Key on every request (fresh keys).
-- id is a global: setup() runs in wrk's main Lua state and sets it in
-- each thread's, where a local of the same name would shadow it (every
-- thread would then send the same keys, and half the "fresh" requests
-- would wait for or replay the other thread's)
id = 0
local n = 0
local run = "r"

function setup(thread)
	id = id + 1
	thread:set("id", id)
end

function init(args)
	run = args[1] or tostring(os.time())
end

function request()
	n = n + 1
	return wrk.format("POST", nil, {
		["Idempotency-Key"] = "bench-" .. run .. "-" .. id .. "-" .. n,
		["Content-Type"] = "application/x-www-form-urlencoded",
	}, "amount=4200")
end
