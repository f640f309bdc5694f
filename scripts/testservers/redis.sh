# A throwaway Redis for the adapter tests: BINKY_TEST_REDIS.
install_pkg redis-server redis-server
if [ -n "$(find_bin redis-server)" ] && [ -z "${BINKY_TEST_REDIS:-}" ]; then
  redis_port="$(free_port)"
  "$(find_bin redis-server)" --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no --dir "$work" \
    --requirepass binky-test --daemonize no >"$work/redis.log" 2>&1 &
  on_exit "kill $!"
  wait_port "$redis_port" 5 || { cat "$work/redis.log" >&2; exit 1; }
  export BINKY_TEST_REDIS="redis://default:binky-test@127.0.0.1:$redis_port/0"
  echo "make test: throwaway redis on 127.0.0.1:$redis_port"
fi
