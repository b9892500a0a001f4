-- idemgate schema 11: idem_quota in InnoDB on a Galera cluster.
--
-- Galera replicates InnoDB rows only: a MEMORY idem_quota counted each
-- node's new keys apart, so gateways on N nodes let a scope N times its
-- new_keys_per_minute.  Migrated on a Galera node, the table is replaced
-- by an empty InnoDB one: one more replicated write per new key on a
-- route with a quota; two nodes adding to one row at once, certification
-- refuses one and the gateway repeats it.  Replaced, not altered: each
-- node's MEMORY rows differ, and a table converted in place would start
-- out different on each node, which Galera takes for an inconsistency
-- (the node leaves the cluster) at the first write to a row one lacks.
-- The current minute's counts are lost, as at a server restart.  A
-- single server keeps MEMORY (no redo log, no fsync on the path of every
-- new key).  idemctl check warns about a MEMORY idem_quota on a Galera
-- node (a store moved onto a cluster after this migration).

SET @idem_galera = COALESCE((SELECT VARIABLE_VALUE = 'ON'
  FROM information_schema.GLOBAL_VARIABLES
  WHERE VARIABLE_NAME = 'WSREP_ON'), 0);

EXECUTE IMMEDIATE IF(@idem_galera,
  'DROP TABLE IF EXISTS idem_quota_new, idem_quota_old', 'DO 0');

EXECUTE IMMEDIATE IF(@idem_galera,
  'CREATE TABLE idem_quota_new LIKE idem_quota', 'DO 0');

EXECUTE IMMEDIATE IF(@idem_galera,
  'ALTER TABLE idem_quota_new ENGINE=InnoDB', 'DO 0');

EXECUTE IMMEDIATE IF(@idem_galera,
  'RENAME TABLE idem_quota TO idem_quota_old, idem_quota_new TO idem_quota',
  'DO 0');

EXECUTE IMMEDIATE IF(@idem_galera, 'DROP TABLE idem_quota_old', 'DO 0');
