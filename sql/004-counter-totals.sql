-- idemgate schema 4: counters that never go down.
--
-- Cleanup folds the per-minute counter rows it prunes into one row per
-- (host, route) here, in the same transaction as the delete, so
-- idemctl metrics (retained rows + these totals) only ever grows.

CREATE TABLE IF NOT EXISTS idem_counters_total (
  host          VARCHAR(255)    NOT NULL,
  route         VARCHAR(255)    NOT NULL,
  requests      BIGINT UNSIGNED NOT NULL DEFAULT 0,
  created       BIGINT UNSIGNED NOT NULL DEFAULT 0,
  reused        BIGINT UNSIGNED NOT NULL DEFAULT 0,
  mismatched    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  conflicted    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  waited        BIGINT UNSIGNED NOT NULL DEFAULT 0,
  released      BIGINT UNSIGNED NOT NULL DEFAULT 0,
  tombstoned    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  store_errors  BIGINT UNSIGNED NOT NULL DEFAULT 0,
  missing_key   BIGINT UNSIGNED NOT NULL DEFAULT 0,
  invalid_key   BIGINT UNSIGNED NOT NULL DEFAULT 0,
  passthrough   BIGINT UNSIGNED NOT NULL DEFAULT 0,
  quota_rejected BIGINT UNSIGNED NOT NULL DEFAULT 0,
  wait_sum_ms   BIGINT UNSIGNED NOT NULL DEFAULT 0,
  wait_b0 BIGINT UNSIGNED NOT NULL DEFAULT 0,
  wait_b1 BIGINT UNSIGNED NOT NULL DEFAULT 0,
  wait_b2 BIGINT UNSIGNED NOT NULL DEFAULT 0,
  wait_b3 BIGINT UNSIGNED NOT NULL DEFAULT 0,
  wait_b4 BIGINT UNSIGNED NOT NULL DEFAULT 0,
  wait_b5 BIGINT UNSIGNED NOT NULL DEFAULT 0,
  wait_b6 BIGINT UNSIGNED NOT NULL DEFAULT 0,
  wait_b7 BIGINT UNSIGNED NOT NULL DEFAULT 0,
  wait_b8 BIGINT UNSIGNED NOT NULL DEFAULT 0,
  wait_b9 BIGINT UNSIGNED NOT NULL DEFAULT 0,
  PRIMARY KEY (host, route)
) ENGINE=InnoDB;
