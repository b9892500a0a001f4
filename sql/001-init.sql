-- idemgate schema 1: keys, fleet counters, cleanup runs.

CREATE TABLE IF NOT EXISTS idem_schema (
  version     INT UNSIGNED NOT NULL PRIMARY KEY,
  name        VARCHAR(64)  NOT NULL,
  applied_at  DATETIME(6)  NOT NULL
) ENGINE=InnoDB;

-- One row per (scope, key).  state: 0 in progress, 1 completed, 2 tombstone.
-- scope and fingerprint are SHA-256 digests, stored binary.
CREATE TABLE IF NOT EXISTS idem_keys (
  id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  scope         BINARY(32)      NOT NULL,
  idem_key      VARBINARY(255)  NOT NULL,
  route         VARCHAR(255)    NOT NULL,
  method        VARCHAR(16)     NOT NULL,
  fingerprint   BINARY(32)      NOT NULL,
  state         TINYINT UNSIGNED NOT NULL,
  owner         VARCHAR(255)    NOT NULL,
  owner_token   BIGINT UNSIGNED NOT NULL,
  waiters       INT UNSIGNED    NOT NULL DEFAULT 0,
  created_at    DATETIME(6)     NOT NULL,
  lease_until   DATETIME(6)     NOT NULL,
  expires_at    DATETIME(6)     NOT NULL,
  completed_at  DATETIME(6)     NULL,
  resp_status   SMALLINT UNSIGNED NULL,
  resp_headers  BLOB            NULL,
  resp_body     LONGBLOB        NULL,
  resp_size     BIGINT UNSIGNED NULL,
  UNIQUE KEY uk_scope_key (scope, idem_key),
  KEY ix_expires (expires_at),
  KEY ix_state_lease (state, lease_until)
) ENGINE=InnoDB;

-- Per-minute counters per gateway host and route.  wait_b0..wait_b9 are
-- the wait-time histogram buckets (<=10ms, 50, 100, 250, 500, 1000, 2500,
-- 5000, 10000, +Inf), not cumulative.
CREATE TABLE IF NOT EXISTS idem_counters (
  minute        DATETIME        NOT NULL,
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
  PRIMARY KEY (minute, host, route),
  KEY ix_route_minute (route, minute)
) ENGINE=InnoDB;

-- One row per idemctl cleanup run.  outcome: ok, partial, failed, dry-run.
CREATE TABLE IF NOT EXISTS idem_cleanup_runs (
  id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  host            VARCHAR(255)    NOT NULL,
  started_at      DATETIME(6)     NOT NULL,
  ended_at        DATETIME(6)     NULL,
  rows_deleted    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  stale_released  BIGINT UNSIGNED NOT NULL DEFAULT 0,
  counters_pruned BIGINT UNSIGNED NOT NULL DEFAULT 0,
  batches         INT UNSIGNED    NOT NULL DEFAULT 0,
  dry_run         TINYINT UNSIGNED NOT NULL DEFAULT 0,
  outcome         VARCHAR(16)     NOT NULL DEFAULT 'running',
  reason          VARCHAR(255)    NOT NULL DEFAULT '',
  KEY ix_started (started_at)
) ENGINE=InnoDB;
