-- idemgate schema 9: one row per idemctl rekey run.
--
-- rekey re-seals stored answers under the current key of secret_key_file
-- (see 008).  rows_rekeyed were re-sealed; rows_changed had been claimed
-- or rewritten by a gateway between the read and the guarded UPDATE and
-- were left alone; rows_unreadable are under a key id the file no longer
-- holds (or fail their tag) and stay as they are.
-- outcome: running, ok, partial (--max-seconds), failed.

CREATE TABLE IF NOT EXISTS idem_rekey_runs (
  id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  host            VARCHAR(255)    NOT NULL,
  started_at      DATETIME(6)     NOT NULL,
  ended_at        DATETIME(6)     NULL,
  to_kid          VARCHAR(32)     NOT NULL,
  rows_rekeyed    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  rows_changed    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  rows_unreadable BIGINT UNSIGNED NOT NULL DEFAULT 0,
  batches         INT UNSIGNED    NOT NULL DEFAULT 0,
  outcome         VARCHAR(16)     NOT NULL DEFAULT 'running',
  reason          VARCHAR(255)    NOT NULL DEFAULT '',
  KEY ix_started (started_at)
) ENGINE=InnoDB;
