# The official MCP TypeScript SDK, for the test that drives `git binky mcp`
# with a real SDK client: BINKY_TEST_MCP_SDK (a folder with node_modules).
# Installed once with npm into the cache; skipped without node and npm.
if [ -z "${BINKY_TEST_MCP_SDK:-}" ] && command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  sdk_dir="$BINKY_TEST_CACHE/mcp-sdk"
  if [ ! -d "$sdk_dir/node_modules/@modelcontextprotocol/sdk" ]; then
    mkdir -p "$sdk_dir"
    cp cmd/binky/testdata/mcp-sdk/package.json "$sdk_dir/"
    (cd "$sdk_dir" && npm install --no-audit --no-fund --silent >/dev/null 2>&1) \
      || echo "make test: could not install the MCP TypeScript SDK; its test will skip" >&2
  fi
  if [ -d "$sdk_dir/node_modules/@modelcontextprotocol/sdk" ]; then
    export BINKY_TEST_MCP_SDK="$sdk_dir"
    echo "make test: MCP TypeScript SDK in $sdk_dir"
  fi
fi
