// An MCP client built on the official TypeScript SDK calls `up` on a world
// whose service is slow to become healthy, with a request timeout shorter
// than the start and resetTimeoutOnProgress on: it only succeeds if binky
// sends progress notifications. Prints one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, dir, name, timeout] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: bin, args: ["mcp"], cwd: dir, env: process.env, stderr: "inherit" });
const client = new Client({ name: "binky-ts-sdk-test", version: "1.0.0" });
await client.connect(transport);
let progress = 0;
const started = Date.now();
try {
  const res = await client.callTool({ name: "up", arguments: { dir, name } }, undefined, {
    timeout: Number(timeout),
    resetTimeoutOnProgress: true,
    onprogress: () => { progress++; },
  });
  console.log(JSON.stringify({ ok: !res.isError, progress, seconds: (Date.now() - started) / 1000, world: res.structuredContent,
    error: res.isError ? JSON.stringify(res.content) : undefined }));
} catch (e) {
  console.log(JSON.stringify({ ok: false, progress, seconds: (Date.now() - started) / 1000, error: String(e) }));
}
await client.close();
