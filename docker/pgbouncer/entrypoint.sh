#!/bin/sh
# The auth file is written from the environment, so no password is kept in the repository (the password
# must not contain a double quote); then PgBouncer runs in the foreground, logging to standard error.
set -eu
printf '"chat_owner" "%s"\n' "$CHAT_OWNER_PASSWORD" > /run/pgbouncer/userlist.txt
exec pgbouncer /etc/pgbouncer/pgbouncer.ini
