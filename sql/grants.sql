-- idemgate least-privilege MySQL/MariaDB users (not a migration: run by hand).
--
-- The second of two steps, after `idemctl migrate` (table privileges need
-- the tables):
--   1. mariadb -u root < sql/grants-migrate.sql    the database, idem_migrate
--   2. idemctl -g idem_migrate migrate
--   3. mariadb -u root < sql/grants.sql            this file
-- Replace every CHANGE-ME password first and, if your database is not
-- called `idemgate`, every `idemgate`. below.
--
-- Then put each user in its own group of one option file, the one the
-- config's mysql_defaults_file names (etc/my.cnf.example, whole, installed
-- in the docs), mode 0640, owner root, group idemgate: the gateway and
-- the cleanup timer both run as idemgate.
--
--   [idemgate]                             ; idem_migrate, idem_cleanup,
--   socket   = /run/mysqld/mysqld.sock     ; idem_console: the same four
--   user     = idem_gateway                ; lines each, socket included
--   password = ...                         ; (or host= / port=)
--   database = idemgate
--
--   idem_migrate  (sql/grants-migrate.sql) idemctl migrate
--   idem_gateway  idemgate: claims, completes, releases keys; adds counters
--   idem_cleanup  idemctl cleanup / forget / rekey (cron): deletes expired
--                 keys, releases stale ones, prunes counters, re-seals
--                 answers under the current key (and the hashing key,
--                 lib/ident/hkey.h), records its runs
--   idem_console  idemtop, idemctl show / stats / metrics: read only
--
-- Named locks (GET_LOCK / RELEASE_LOCK), which idemgate waits on and
-- cleanup runs under, need no privilege.  Replace 'localhost' with the
-- gateway hosts' address pattern when the database is remote, and prefer
-- REQUIRE SSL for users that connect over a network.

CREATE USER IF NOT EXISTS 'idem_gateway'@'localhost' IDENTIFIED BY 'CHANGE-ME-gateway';
GRANT SELECT, INSERT, UPDATE, DELETE ON `idemgate`.`idem_keys` TO 'idem_gateway'@'localhost';
GRANT SELECT, INSERT, UPDATE ON `idemgate`.`idem_counters` TO 'idem_gateway'@'localhost';
GRANT SELECT ON `idemgate`.`idem_schema` TO 'idem_gateway'@'localhost';
GRANT SELECT ON `idemgate`.`idem_epoch` TO 'idem_gateway'@'localhost';
GRANT SELECT, INSERT, UPDATE ON `idemgate`.`idem_quota` TO 'idem_gateway'@'localhost';
GRANT SELECT, INSERT ON `idemgate`.`idem_hash_key` TO 'idem_gateway'@'localhost';

CREATE USER IF NOT EXISTS 'idem_cleanup'@'localhost' IDENTIFIED BY 'CHANGE-ME-cleanup';
GRANT SELECT, UPDATE, DELETE ON `idemgate`.`idem_keys` TO 'idem_cleanup'@'localhost';
GRANT SELECT, DELETE ON `idemgate`.`idem_counters` TO 'idem_cleanup'@'localhost';
GRANT SELECT, INSERT, UPDATE, DELETE ON `idemgate`.`idem_cleanup_runs` TO 'idem_cleanup'@'localhost';
GRANT SELECT ON `idemgate`.`idem_schema` TO 'idem_cleanup'@'localhost';
GRANT SELECT, DELETE ON `idemgate`.`idem_quota` TO 'idem_cleanup'@'localhost';
GRANT SELECT, INSERT, UPDATE ON `idemgate`.`idem_counters_total` TO 'idem_cleanup'@'localhost';
GRANT SELECT, INSERT, UPDATE, DELETE ON `idemgate`.`idem_locks` TO 'idem_cleanup'@'localhost';
GRANT SELECT, INSERT, UPDATE ON `idemgate`.`idem_rekey_runs` TO 'idem_cleanup'@'localhost';
GRANT SELECT, INSERT, UPDATE ON `idemgate`.`idem_hash_key` TO 'idem_cleanup'@'localhost';

CREATE USER IF NOT EXISTS 'idem_console'@'localhost' IDENTIFIED BY 'CHANGE-ME-console';
GRANT SELECT ON `idemgate`.`idem_keys` TO 'idem_console'@'localhost';
GRANT SELECT ON `idemgate`.`idem_counters` TO 'idem_console'@'localhost';
GRANT SELECT ON `idemgate`.`idem_cleanup_runs` TO 'idem_console'@'localhost';
GRANT SELECT ON `idemgate`.`idem_schema` TO 'idem_console'@'localhost';
GRANT SELECT ON `idemgate`.`idem_counters_total` TO 'idem_console'@'localhost';
GRANT SELECT ON `idemgate`.`idem_hash_key` TO 'idem_console'@'localhost';
