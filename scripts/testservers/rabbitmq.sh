# A throwaway RabbitMQ for the adapter tests: BINKY_TEST_RABBITMQ.
# The node takes seconds to boot, so it is started in the background and
# not waited for here: the tests wait for its management API themselves
# (adapters/rabbitmq's adminURL), while go vet and the build run.
install_pkg rabbitmq-server rabbitmq-server
rabbitmq_script=""
# Debian's /usr/sbin/rabbitmq-server is a wrapper that su's to the rabbitmq
# user and drops our environment; the real script is beside it.
if [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then rabbitmq_script=/usr/lib/rabbitmq/bin/rabbitmq-server
elif [ -n "$(find_bin rabbitmq-server)" ]; then rabbitmq_script="$(find_bin rabbitmq-server)"; fi
if [ -n "$rabbitmq_script" ] && [ -z "${BINKY_TEST_RABBITMQ:-}" ]; then
  rabbitmq_dir="$work/rabbitmq"
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
      RABBITMQ_NODENAME="binky-test-$$@localhost" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$rabbitmq_port" \
      RABBITMQ_DIST_PORT="$rabbitmq_dist" ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT="$rabbitmq_epmd" \
      RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
      RABBITMQ_CONF_ENV_FILE="$rabbitmq_dir/rabbitmq-env.conf" RABBITMQ_CONFIG_FILE="$rabbitmq_dir/rabbitmq.conf" \
      RABBITMQ_ADVANCED_CONFIG_FILE="$rabbitmq_dir/advanced.config" RABBITMQ_ENABLED_PLUGINS_FILE="$rabbitmq_dir/enabled_plugins" \
      RABBITMQ_MNESIA_BASE="$rabbitmq_dir/mnesia" RABBITMQ_LOG_BASE="$rabbitmq_dir/log" RABBITMQ_PID_FILE="$rabbitmq_dir/pid"
    exec setsid "$rabbitmq_script" </dev/null >"$work/rabbitmq.log" 2>&1
  ) &
  rabbitmq_pid=$!
  # A throwaway node need not shut down cleanly: kill the VM (its pid file)
  # and its start script, then its epmd, which refuses while the node is
  # registered.
  rabbitmq_stop() {
    kill -KILL "$(cat "$rabbitmq_dir/pid" 2>/dev/null)" "$rabbitmq_pid" 2>/dev/null || true
    local _
    for _ in $(seq 100); do
      epmd -port "$rabbitmq_epmd" -kill 2>/dev/null | grep -q living || break
      sleep 0.05
    done
  }
  on_exit rabbitmq_stop
  export BINKY_TEST_RABBITMQ="amqp://binky:binky-test@127.0.0.1:$rabbitmq_port?management=$rabbitmq_mgmt"
  echo "make test: throwaway rabbitmq starting on 127.0.0.1:$rabbitmq_port (management :$rabbitmq_mgmt)"
fi
