#!/usr/bin/env bash
# gen.sh regenerates the Python SDK's protobuf and gRPC modules into
# src/switchboard_worker/_proto (committed; `make sdk-verify` checks they are
# current). buf compiles proto/ (make protodeps fetches what it imports) and
# runs Debian's protoc and grpc_python_plugin (deploy/local/python-sdk.sh).
#
# The generated modules import each other as `switchboard.queue.v1…`; they
# are moved under the package (`switchboard_worker._proto.switchboard…`), so
# the wheel ships no top-level `switchboard` package that could clash with
# another distribution. The second rewrite fixes the messages' __module__,
# which pickle and repr use.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/sdk/python/src/switchboard_worker/_proto
rm -rf "$out"
(cd "$root" && buf generate --template sdk/python/buf.gen.yaml)
find "$out" \( -name '*.py' -o -name '*.pyi' \) -exec sed -i -E \
  -e 's/^(from|import) switchboard\./\1 switchboard_worker._proto.switchboard./' \
  -e "s/'switchboard\.([a-z0-9_.]+_pb2)'/'switchboard_worker._proto.switchboard.\1'/" {} +
find "$out" -type d -exec touch {}/__init__.py \;
