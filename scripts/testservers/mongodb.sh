# A throwaway FerretDB (the MongoDB wire protocol on PostgreSQL) for the
# mongodb adapter tests: BINKY_TEST_MONGO. It runs on the throwaway
# PostgreSQL (started here if postgres.sh has not run yet; it does nothing
# when BINKY_TEST_PG is set). Set BINKY_TEST_MONGO to a real mongod's admin
# URL (started with --auth) to run the same tests against it instead.
if [ -z "${BINKY_TEST_MONGO:-}" ]; then
  [ -n "${BINKY_TEST_PG:-}" ] || . scripts/testservers/postgres.sh
  if [ -n "${BINKY_TEST_PG:-}" ] && ./scripts/build-ferretdb.sh "$BINKY_TEST_CACHE/bin" && [ -n "$(find_bin psql)" ]; then
    # postgres://user:pw@host:port/db?... → its parts.
    pg_rest="${BINKY_TEST_PG#*://}"; pg_creds="${pg_rest%%@*}"; pg_hostport="${pg_rest#*@}"; pg_hostport="${pg_hostport%%/*}"
    "$(find_bin psql)" "$BINKY_TEST_PG" -qc "CREATE DATABASE binky_ferretdb_test" >/dev/null 2>&1 || true
    ferret_port="$(free_port)"
    mkdir -p "$work/ferretdb"
    # The --postgresql-url's user does not exist: FerretDB lends it to
    # clients that send no credentials, so it must not be able to log in.
    "$BINKY_TEST_CACHE/bin/ferretdb" --postgresql-url="postgres://binky_nobody@$pg_hostport/binky_ferretdb_test?sslmode=disable" \
      --listen-addr="127.0.0.1:$ferret_port" --debug-addr=- --telemetry=disable --state-dir="$work/ferretdb" \
      --log-level=warn >"$work/ferretdb.log" 2>&1 &
    on_exit "kill $!"
    wait_port "$ferret_port" 10 || { cat "$work/ferretdb.log" >&2; exit 1; }
    export BINKY_TEST_MONGO="mongodb://$pg_creds@127.0.0.1:$ferret_port/?authMechanism=PLAIN&postgres=$pg_hostport/binky_ferretdb_test"
    echo "make test: throwaway FerretDB on 127.0.0.1:$ferret_port (PostgreSQL $pg_hostport)"
  else
    echo "make test: no FerretDB (needs PostgreSQL, psql and Go); the mongodb tests will skip" >&2
  fi
fi
