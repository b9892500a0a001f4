-- idemgate: the database and the user that migrates it (not a migration:
-- run by hand, first).  See sql/grants.sql for the whole order:
--   1. mariadb -u root < sql/grants-migrate.sql    this file
--   2. idemctl -g idem_migrate migrate
--   3. mariadb -u root < sql/grants.sql
-- Replace the CHANGE-ME password first and, if your database is not called
-- `idemgate`, every `idemgate` below.
--
-- idem_migrate creates and alters the tables and is the definer of the
-- triggers that bump idem_epoch (migration 002): do not drop it while they
-- exist.  With binary logging on, creating them also needs SUPER or
-- log_bin_trust_function_creators = 1.

CREATE DATABASE IF NOT EXISTS `idemgate`;
CREATE USER IF NOT EXISTS 'idem_migrate'@'localhost' IDENTIFIED BY 'CHANGE-ME-migrate';
GRANT ALL PRIVILEGES ON `idemgate`.* TO 'idem_migrate'@'localhost';

