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
# deploy/local/npm-lock.sh installs it: `npm ci` of the lock, once per
# machine and lock, into ~/.cache/switchboard-npm. It needs node and npm
# (Debian: apt-get install nodejs npm) and the npm registry; if it cannot
# install, it exits non-zero and says why. Messages go to stderr so stdout is
# only ever the path. Safe to run again.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
entry=node_modules/@modelcontextprotocol/inspector-cli/build/index.js
dir=$("$here/npm-lock.sh" "$here/mcp-inspector" "$entry")
printf '%s\n' "$dir/$entry"
