#!/bin/sh
# Run once by the postgres image when its volume is first initialised (compose.yaml):
# the application's role, with the password TURNKEEP_DATABASE_URL carries. LOGIN, not
# a superuser, no BYPASSRLS, not the tables' owner, so row-level security binds it.
# Migration 0006 grants it the tables (and creates it, without a password, where it
# is absent).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v pw="$TURNKEEP_APP_DB_PASSWORD" <<'SQL'
CREATE ROLE turnkeep_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'pw';
SQL
