-- wrk: POST without an Idempotency-Key (pass-through).
wrk.method = "POST"
wrk.body = "amount=4200"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
