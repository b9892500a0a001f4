-- idemgate schema 7: replays answered from a worker's replay cache, a
-- part of reused, counted apart so that the share of replays the cache
-- serves can be watched (a cache that stops answering sends every retry
-- back to MySQL).

ALTER TABLE idem_counters
  ADD COLUMN IF NOT EXISTS cache_hits BIGINT UNSIGNED NOT NULL DEFAULT 0
  AFTER quota_rejected;

ALTER TABLE idem_counters_total
  ADD COLUMN IF NOT EXISTS cache_hits BIGINT UNSIGNED NOT NULL DEFAULT 0
  AFTER quota_rejected;
