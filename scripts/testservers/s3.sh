# A throwaway MinIO for the S3 adapter tests: BINKY_TEST_S3.
# MinIO is built from its Go module once into $BINKY_TEST_CACHE/bin (the
# first build takes minutes; later runs reuse it). MinIO is AGPL-3.0: the
# tests run it as a separate program; binky never links it.
# curl seeds the golden bucket in the end-to-end test (--aws-sigv4).
install_pkg curl curl
minio_module="github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"
if [ -z "${BINKY_TEST_S3:-}" ]; then
  minio_bin="$BINKY_TEST_CACHE/bin/minio"
  if [ ! -x "$minio_bin" ]; then
    echo "make test: building minio ($minio_module) into $BINKY_TEST_CACHE/bin, once; this takes a few minutes"
    GOBIN="$BINKY_TEST_CACHE/bin" GOFLAGS=-mod=mod go install "$minio_module" >"$work/minio-build.log" 2>&1 \
      || { echo "make test: could not build minio (log below); the S3 tests will skip" >&2; tail -n 20 "$work/minio-build.log" >&2; }
  fi
  if [ -x "$minio_bin" ]; then
    minio_port="$(free_port)"
    minio_console="$(free_port)"
    minio_secret="binky-test-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
    mkdir -p "$work/minio"
    MINIO_ROOT_USER=binky-test MINIO_ROOT_PASSWORD="$minio_secret" MINIO_BROWSER=off MINIO_UPDATE=off \
      "$minio_bin" server "$work/minio" --address "127.0.0.1:$minio_port" --console-address "127.0.0.1:$minio_console" --quiet \
      >"$work/minio.log" 2>&1 &
    on_exit "kill $!"
    wait_port "$minio_port" 60 || { cat "$work/minio.log" >&2; exit 1; }
    # Listening is not ready: MinIO answers 503 until its drive is set up.
    for _ in $(seq 200); do
      minio_status="$( { exec 3<>"/dev/tcp/127.0.0.1/$minio_port" && printf 'GET /minio/health/ready HTTP/1.0\r\n\r\n' >&3 && head -n 1 <&3; } 2>/dev/null || true)"
      case "$minio_status" in *" 200 "*) break ;; esac
      sleep 0.1
    done
    export BINKY_TEST_S3="s3://binky-test:$minio_secret@127.0.0.1:$minio_port"
    echo "make test: throwaway minio on 127.0.0.1:$minio_port"
  fi
fi

# A throwaway versitygw (Apache-2.0), an S3 gateway without MinIO's admin
# API, for the adapter's plain-S3 path: BINKY_TEST_S3_PLAIN. Built once too.
vgw_module="github.com/versity/versitygw/cmd/versitygw@v1.8.0"
if [ -z "${BINKY_TEST_S3_PLAIN:-}" ]; then
  vgw_bin="$BINKY_TEST_CACHE/bin/versitygw"
  if [ ! -x "$vgw_bin" ]; then
    echo "make test: building versitygw ($vgw_module) into $BINKY_TEST_CACHE/bin, once"
    GOBIN="$BINKY_TEST_CACHE/bin" GOFLAGS=-mod=mod go install "$vgw_module" >"$work/versitygw-build.log" 2>&1 \
      || { echo "make test: could not build versitygw (log below); the plain-S3 tests will skip" >&2; tail -n 20 "$work/versitygw-build.log" >&2; }
  fi
  if [ -x "$vgw_bin" ]; then
    vgw_port="$(free_port)"
    vgw_secret="binky-test-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
    mkdir -p "$work/versitygw"
    ROOT_ACCESS_KEY=binky-plain ROOT_SECRET_KEY="$vgw_secret" \
      "$vgw_bin" --port "127.0.0.1:$vgw_port" posix "$work/versitygw" >"$work/versitygw.log" 2>&1 &
    on_exit "kill $!"
    wait_port "$vgw_port" 30 || { cat "$work/versitygw.log" >&2; exit 1; }
    export BINKY_TEST_S3_PLAIN="s3://binky-plain:$vgw_secret@127.0.0.1:$vgw_port"
    echo "make test: throwaway versitygw on 127.0.0.1:$vgw_port"
  fi
fi
