-- idemgate schema 2: the replay-cache epoch (see lib/rcache.h).
--
-- Gateways keep recent answers in memory and read idem_epoch.n every 25 ms;
-- a change empties their caches.  The triggers bump it whenever a completed
-- (or tombstoned) row that has not expired is deleted or has anything but
-- its waiters count changed: idemctl forget, or an edit by hand.  Cleanup
-- (expired rows), releases and takeovers (in-progress or expired rows) and
-- the gateways' own updates leave it alone, and cost them one IF.
-- Triggers run as their definer: keep the user that ran the migration
-- (idem_migrate in sql/grants.sql).  DELIMITER works as in the mysql client.

CREATE TABLE IF NOT EXISTS idem_epoch (
  id  TINYINT UNSIGNED NOT NULL PRIMARY KEY,
  n   BIGINT UNSIGNED  NOT NULL
) ENGINE=InnoDB;

INSERT IGNORE INTO idem_epoch (id, n) VALUES (1, 0);

DELIMITER //

CREATE TRIGGER IF NOT EXISTS idem_keys_epoch_del AFTER DELETE ON idem_keys
FOR EACH ROW
IF OLD.state <> 0 AND OLD.expires_at > NOW(6) THEN
  UPDATE idem_epoch SET n = n + 1 WHERE id = 1;
END IF//

CREATE TRIGGER IF NOT EXISTS idem_keys_epoch_upd AFTER UPDATE ON idem_keys
FOR EACH ROW
IF OLD.state <> 0 AND OLD.expires_at > NOW(6)
  AND NOT (NEW.state <=> OLD.state AND NEW.scope <=> OLD.scope
    AND NEW.idem_key <=> OLD.idem_key AND NEW.fingerprint <=> OLD.fingerprint
    AND NEW.expires_at <=> OLD.expires_at
    AND NEW.resp_status <=> OLD.resp_status
    AND NEW.resp_headers <=> OLD.resp_headers
    AND NEW.resp_body <=> OLD.resp_body) THEN
  UPDATE idem_epoch SET n = n + 1 WHERE id = 1;
END IF//

DELIMITER ;
