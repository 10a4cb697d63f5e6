-- Run by the postgres image on a fresh volume only (docker-entrypoint-initdb.d), in the database
-- `postgres`: the data plane's admin database, where query-performance insights read
-- pg_stat_statements. The library itself is preloaded by the service's command (docker-compose.yml).
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
