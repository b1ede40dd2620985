#!/bin/sh
# Runs once, when the PostgreSQL volume is created (docker-entrypoint-initdb.d), as the image's superuser.
# The service connects as chat_owner: it owns the database and runs the migrations, and may create the
# two roles they make (CREATEROLE), but is not a superuser, since a superuser bypasses row-level
# security. This mirrors what .ci/run does for its tests.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v owner_password="$CHAT_OWNER_PASSWORD" <<'SQL'
CREATE ROLE chat_owner LOGIN CREATEROLE PASSWORD :'owner_password';
CREATE DATABASE chat OWNER chat_owner;
SQL
