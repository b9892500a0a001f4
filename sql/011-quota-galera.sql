-- idemgate schema 11: idem_quota in InnoDB on a Galera cluster.
--
-- Galera replicates InnoDB rows only: a MEMORY idem_quota counted each
-- node's new keys apart, so gateways on N nodes let a scope N times its
-- new_keys_per_minute.  Migrated on a Galera node, the table becomes
-- InnoDB: one more replicated write per new key on a route with a quota;
-- two nodes adding to one row at once, certification refuses one and the
-- gateway repeats it.  A single server keeps MEMORY (no redo log, no
-- fsync on the path of every new key).  idemctl check warns about a
-- MEMORY idem_quota on a Galera node (a store moved onto a cluster).

SET @idem_quota_engine = COALESCE((SELECT IF(VARIABLE_VALUE = 'ON',
  'InnoDB', NULL) FROM information_schema.GLOBAL_VARIABLES
  WHERE VARIABLE_NAME = 'WSREP_ON'), 'MEMORY');

EXECUTE IMMEDIATE CONCAT('ALTER TABLE idem_quota ENGINE=', @idem_quota_engine);
