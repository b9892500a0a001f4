-- idemgate schema 6: when a claimed run is surely over, and its fence.
--
-- run_deadline: the latest moment the run of an in-progress key can still
-- be executing, on the server's clock (claim time + the route's timeout
-- and kill grace for a CGI, + run_limit for a FastCGI upstream; the end
-- of time, 9999-12-31, when no bound is known, as for an upstream route
-- without run_limit).  NULL: a row claimed before this migration (or by
-- an older gateway during an upgrade), judged by its lease alone, as it
-- was then.  A key
-- whose owner died or whose lease lapsed is taken over only once its
-- run_deadline has passed: a PHP-FPM script goes on after its connection
-- closed, and a lease says nothing about that.
--
-- takeovers: how often the row was taken over.  IDEMGATE_FENCE, handed
-- to every run, is id * 1000000 + takeovers: it grows with each claim of
-- a key (a new row gets a larger id: InnoDB never hands out an
-- AUTO_INCREMENT value twice) and each takeover.

ALTER TABLE idem_keys
  ADD COLUMN IF NOT EXISTS run_deadline DATETIME(6) NULL AFTER lease_until,
  ADD COLUMN IF NOT EXISTS takeovers INT UNSIGNED NOT NULL DEFAULT 0
  AFTER owner_token;
