-- wrk: POST the same Idempotency-Key and body every time (all replays).
wrk.method = "POST"
wrk.body = "amount=4200"
wrk.headers["Idempotency-Key"] = "bench-replay-key"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
