# A throwaway RabbitMQ for the adapter tests: BINKY_TEST_RABBITMQ.
# The node takes seconds to boot, so it is started in the background here
# and waited for once go vet is done (before_tests). A node that is not up
# by then has its log printed and is started once more on fresh ports: a
# run must not spend the rabbitmq tests' timeouts on a node that died at
# boot, and CI must show why it died.
install_pkg rabbitmq-server rabbitmq-server
rabbitmq_script=""
# Debian's /usr/sbin/rabbitmq-server is a wrapper that su's to the rabbitmq
# user and drops our environment; the real script is beside it.
if [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then rabbitmq_script=/usr/lib/rabbitmq/bin/rabbitmq-server
elif [ -n "$(find_bin rabbitmq-server)" ]; then rabbitmq_script="$(find_bin rabbitmq-server)"; fi

# rabbitmq_start N: boot node N (a fresh folder, fresh ports) in the
# background and export BINKY_TEST_RABBITMQ for it.
rabbitmq_start() {
  rabbitmq_dir="$work/rabbitmq-$1"
  mkdir -p "$rabbitmq_dir"
  rabbitmq_port="$(free_port)"; rabbitmq_mgmt="$(free_port)"; rabbitmq_dist="$(free_port)"; rabbitmq_epmd="$(free_port)"
  head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$rabbitmq_dir/.erlang.cookie"
  chmod 600 "$rabbitmq_dir/.erlang.cookie"
  cat > "$rabbitmq_dir/rabbitmq.conf" <<CONF
listeners.tcp.default = 127.0.0.1:$rabbitmq_port
management.tcp.ip = 127.0.0.1
management.tcp.port = $rabbitmq_mgmt
default_user = binky
default_pass = binky-test
default_user_tags.administrator = true
log.console = false
CONF
  echo '[rabbitmq_management].' > "$rabbitmq_dir/enabled_plugins"
  : > "$rabbitmq_dir/rabbitmq-env.conf"
  (
    cd "$rabbitmq_dir"
    export HOME="$rabbitmq_dir" LANG=C.UTF-8 LC_ALL=C.UTF-8 \
      RABBITMQ_NODENAME="binky-test-$$-$1@localhost" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$rabbitmq_port" \
      RABBITMQ_DIST_PORT="$rabbitmq_dist" ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT="$rabbitmq_epmd" \
      RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
      RABBITMQ_CONF_ENV_FILE="$rabbitmq_dir/rabbitmq-env.conf" RABBITMQ_CONFIG_FILE="$rabbitmq_dir/rabbitmq.conf" \
      RABBITMQ_ADVANCED_CONFIG_FILE="$rabbitmq_dir/advanced.config" RABBITMQ_ENABLED_PLUGINS_FILE="$rabbitmq_dir/enabled_plugins" \
      RABBITMQ_MNESIA_BASE="$rabbitmq_dir/mnesia" RABBITMQ_LOG_BASE="$rabbitmq_dir/log" RABBITMQ_PID_FILE="$rabbitmq_dir/pid"
    exec setsid "$rabbitmq_script" </dev/null >"$rabbitmq_dir/stdout.log" 2>&1
  ) &
  rabbitmq_pid=$!
  # One line a node: the stop below must reach every node started.
  on_exit "$(printf 'rabbitmq_stop %q %q %q' "$rabbitmq_dir" "$rabbitmq_pid" "$rabbitmq_epmd")"
  export BINKY_TEST_RABBITMQ="amqp://binky:binky-test@127.0.0.1:$rabbitmq_port?management=$rabbitmq_mgmt"
  echo "make test: throwaway rabbitmq starting on 127.0.0.1:$rabbitmq_port (management :$rabbitmq_mgmt)"
}

# rabbitmq_stop DIR PID EPMD_PORT: a throwaway node need not shut down
# cleanly: kill the start script's whole group (setsid made it the leader;
# the VM is its child, which may not have written its pid file yet), the VM
# by its pid file, then its epmd, which refuses while the node is
# registered.
rabbitmq_stop() {
  kill -KILL -- -"$2" 2>/dev/null || true
  kill -KILL "$(cat "$1/pid" 2>/dev/null)" "$2" 2>/dev/null || true
  local _
  for _ in $(seq 100); do
    epmd -port "$3" -kill 2>&1 | grep -q living || break
    sleep 0.05
  done
}

# rabbitmq_log: what the node said, for a run where it never came up.
rabbitmq_log() {
  echo "make test: rabbitmq in $rabbitmq_dir is not up (management :$rabbitmq_mgmt); its output and logs:" >&2
  tail -n 40 "$rabbitmq_dir/stdout.log" >&2 2>/dev/null || true
  for f in "$rabbitmq_dir"/log/*.log; do
    if [ -f "$f" ]; then echo "--- $f" >&2; tail -n 60 "$f" >&2; fi
  done
}

# rabbitmq_up SECONDS: wait until the node's management port listens (the
# management API is what the tests use); fail at once if its start script
# is gone.
rabbitmq_up() {
  local _
  for _ in $(seq $(( $1 * 10 ))); do
    (exec 3<>"/dev/tcp/127.0.0.1/$rabbitmq_mgmt") 2>/dev/null && return 0
    kill -0 "$rabbitmq_pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# rabbitmq_await: the node up, or its log printed and a second one started.
rabbitmq_await() {
  rabbitmq_up 90 && return 0
  rabbitmq_log
  rabbitmq_stop "$rabbitmq_dir" "$rabbitmq_pid" "$rabbitmq_epmd"
  rabbitmq_start 2
  rabbitmq_up 120 && return 0
  rabbitmq_log
  echo "make test: the throwaway rabbitmq did not come up twice; its tests will fail" >&2
}

if [ -n "$rabbitmq_script" ] && [ -z "${BINKY_TEST_RABBITMQ:-}" ]; then
  rabbitmq_start 1
  before_tests rabbitmq_await
fi
