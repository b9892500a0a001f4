-- wrk: POST with a new Idempotency-Key on every request (fresh keys).
local id = 0
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
