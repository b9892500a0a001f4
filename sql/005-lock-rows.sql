-- idemgate schema 5: lock rows, for what must not overlap on a Galera
-- cluster, where a named lock (GET_LOCK) is local to its node.
--
-- idemctl cleanup takes the row 'idemgate-cleanup' there (on one server
-- it keeps its named lock): an INSERT that certification lets only one
-- node win, owned by one run until 'until' (renewed while it runs), so a
-- run that died frees it by itself.

CREATE TABLE IF NOT EXISTS idem_locks (
  name          VARCHAR(64)     NOT NULL,
  owner         VARCHAR(300)    NOT NULL,
  until         DATETIME(6)     NOT NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB;
