# A throwaway MariaDB for the adapter tests: BINKY_TEST_MYSQL.
# The Debian package's postinst would start the system-wide service:
# install_pkg writes a policy-rc.d first that keeps it from doing so.
install_pkg mariadbd mariadb-server
if [ -n "$(find_bin mariadbd)" ] && [ -n "$(find_bin mariadb-install-db)" ] && [ -z "${BINKY_TEST_MYSQL:-}" ]; then
  my_port="$(free_port)"
  my_dir="$work/mysql"
  my_user="$(id -un)"
  if [ "$(id -u)" = 0 ]; then my_user=mysql; fi
  mkdir -p "$my_dir/data" "$my_dir/run"
  : > "$my_dir/mysql.log"
  if [ "$(id -u)" = 0 ]; then chown -R mysql "$my_dir"; fi
  run_as "$my_user" "$(find_bin mariadb-install-db)" --no-defaults --datadir="$my_dir/data" \
    --auth-root-authentication-method=normal --skip-test-db >"$work/mysql-install.log" 2>&1 \
    || { cat "$work/mysql-install.log" >&2; exit 1; }
  # The admin the tests use: root over TCP with a password, made before the
  # server first listens (bootstrap mode reads SQL on stdin).
  printf "FLUSH PRIVILEGES;\nCREATE USER IF NOT EXISTS root@'127.0.0.1';\nALTER USER root@'127.0.0.1' IDENTIFIED BY 'binky-test';\nGRANT ALL ON *.* TO root@'127.0.0.1' WITH GRANT OPTION;\n" \
    | run_as "$my_user" "$(find_bin mariadbd)" --no-defaults --datadir="$my_dir/data" --bootstrap >>"$work/mysql-install.log" 2>&1 \
    || { cat "$work/mysql-install.log" >&2; exit 1; }
  run_as "$my_user" "$(find_bin mariadbd)" --no-defaults --datadir="$my_dir/data" --socket="$my_dir/run/mysql.sock" \
    --port="$my_port" --bind-address=127.0.0.1 --skip-name-resolve --max-connections=500 \
    --innodb-buffer-pool-size=64M --log-error="$my_dir/mysql.log" --pid-file="$my_dir/run/mysql.pid" >/dev/null 2>&1 &
  # The pid file names mariadbd itself, not the runuser in front of it.
  on_exit "kill \$(cat '$my_dir/run/mysql.pid')"
  wait_port "$my_port" 30 || { cat "$my_dir/mysql.log" >&2; exit 1; }
  export BINKY_TEST_MYSQL="mysql://root:binky-test@127.0.0.1:$my_port/"
  echo "make test: throwaway mariadb on 127.0.0.1:$my_port"
fi
