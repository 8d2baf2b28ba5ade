#!/usr/bin/env bash
# mcp-inspector.sh makes sure the official MCP Inspector CLI
# (@modelcontextprotocol/inspector-cli, pinned with its whole dependency tree
# in deploy/local/mcp-inspector/package-lock.json) is installed, for the test
# that drives services/mcp with it, and prints the path of its CLI-mode entry
# point on stdout, to run with node (the package's own bin is a launcher of
# the whole Inspector, which is not installed). Run it from its own folder: it
# looks for its package.json relative to the working directory:
#   cli=$(deploy/local/mcp-inspector.sh)
#   (cd "$(dirname "$cli")" && node "$cli" http://127.0.0.1:8080/mcp --method tools/list \
#     --header "Authorization: Bearer $SWITCHBOARD_TOKEN")
#
# It runs `npm ci` (exactly the lock, no install scripts) into
# .local/mcp-inspector, which is not committed, and again only when the lock
# changed. It needs node and npm (Debian: apt-get install nodejs npm) and the
# npm registry; if it cannot install, it exits non-zero and says why.
# Messages go to stderr so stdout is only ever the path. Safe to run again.
set -euo pipefail

log() { printf 'mcp-inspector.sh: %s\n' "$*" >&2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
src=$root/deploy/local/mcp-inspector
dir=$root/.local/mcp-inspector
bin=$dir/node_modules/@modelcontextprotocol/inspector-cli/build/index.js

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    log "$tool is missing; install Node.js 20 or later with npm (Debian: apt-get install -y nodejs npm)"
    exit 1
  fi
done

if [[ -f $bin ]] && cmp -s "$src/package-lock.json" "$dir/package-lock.json"; then
  printf '%s\n' "$bin"
  exit 0
fi

log "installing @modelcontextprotocol/inspector-cli (npm ci into $dir)"
mkdir -p "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
if ! (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2); then
  log "npm ci failed; check access to the npm registry"
  exit 1
fi
if [[ ! -f $bin ]]; then
  log "npm ci succeeded but $bin is missing"
  exit 1
fi
printf '%s\n' "$bin"
