-- wrk: POST the same Idempotency-Key and body every time (all replays).
-- The key is the first script argument (default bench-replay-key).
wrk.method = "POST"
wrk.body = "amount=4200"
wrk.headers["Idempotency-Key"] = "bench-replay-key"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"

function init(args)
	if args[1] ~= nil then
		wrk.headers["Idempotency-Key"] = args[1]
	end
end
