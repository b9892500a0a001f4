-- wrk, cluster section (one wrk per node's gateway): POSTs with a new key
-- each time (MODE fresh) or one key (replay).  args: MODE, RUN (keys'
-- prefix).
-- id is a global, set per thread by setup() (see fresh.lua)
id = 0
local n, mode, run = 0, "fresh", "r"

function setup(thread)
	id = id + 1
	thread:set("id", id)
end

function init(args)
	mode = args[1] or "fresh"
	run = args[2] or tostring(os.time())
end

function request()
	local key
	n = n + 1
	if mode == "replay" then
		key = "bench-" .. run
	else
		key = "bench-" .. run .. "-" .. id .. "-" .. n
	end
	return wrk.format("POST", nil, {
		["Idempotency-Key"] = key,
		["Content-Type"] = "application/x-www-form-urlencoded",
	}, "amount=4200")
end
