#!/usr/bin/env bash
# protodeps.sh fills third_party/ with the upstream .proto files that proto/
# imports, copied from Go modules in the module cache (only the Go module proxy
# is needed). buf.yaml lists each folder as a buf module. third_party/ is
# git-ignored: these files are fetched at generate time and never committed.
#
#   third_party/googleapis/google/api/{annotations,http,httpbody}.proto
#       for google.api.http options, from github.com/grpc-ecosystem/grpc-gateway
#       v1 — the only served module that ships them (grpc-gateway v2 and
#       genproto ship only generated Go for google/api).
#   third_party/protovalidate/buf/validate/validate.proto
#       for request validation rules, from github.com/bufbuild/protovalidate
#       (the spec repository; the Go runtime is buf.build/go/protovalidate).
#   third_party/openapiv2/protoc-gen-openapiv2/options/{annotations,openapiv2}.proto
#       for the OpenAPI document options (openapiv2_swagger), from
#       github.com/grpc-ecosystem/grpc-gateway/v2 (the module whose
#       protoc-gen-openapiv2 and runtime we already use; it ships the protos
#       next to their generated Go).
#
# Idempotent and quiet: prints nothing on success and leaves up-to-date files
# untouched. Run from anywhere.
set -euo pipefail

GOOGLEAPIS_MODULE=${GOOGLEAPIS_MODULE:-github.com/grpc-ecosystem/grpc-gateway@v1.16.0}
PROTOVALIDATE_MODULE=${PROTOVALIDATE_MODULE:-github.com/bufbuild/protovalidate@v1.2.2}
OPENAPIV2_MODULE=${OPENAPIV2_MODULE:-github.com/grpc-ecosystem/grpc-gateway/v2@v2.33.0}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fail() { printf 'protodeps.sh: %s\n' "$*" >&2; exit 1; }

# module_dir MODULE@VERSION: the module's directory in the module cache.
module_dir() {
  local json dir
  # Outside any workspace, so go.work and the repo's go.mod files neither
  # influence nor get touched by the lookup.
  json=$(cd "$root" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$1" 2>&1) ||
    fail "go mod download $1 failed: $json"
  dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [[ -n $dir && -d $dir ]] || fail "no module directory for $1"
  printf '%s' "$dir"
}

# copy SRC_DIR DEST_DIR NAME...: install each file that exists (module cache
# files are read-only; copies are 0644).
copy() {
  local src=$1 dest=$2 name
  shift 2
  mkdir -p "$dest"
  for name in "$@"; do
    [[ -f $src/$name ]] || continue
    if cmp -s "$src/$name" "$dest/$name"; then
      chmod 0644 "$dest/$name"
    else
      install -m 0644 "$src/$name" "$dest/$name"
    fi
  done
}

dir=$(module_dir "$GOOGLEAPIS_MODULE")
src=$dir/third_party/googleapis/google/api
[[ -f $src/annotations.proto && -f $src/http.proto ]] || fail "$GOOGLEAPIS_MODULE has no google/api protos"
copy "$src" "$root/third_party/googleapis/google/api" annotations.proto http.proto httpbody.proto

dir=$(module_dir "$PROTOVALIDATE_MODULE")
src=$dir/proto/protovalidate/buf/validate
[[ -f $src/validate.proto ]] || fail "$PROTOVALIDATE_MODULE has no buf/validate/validate.proto"
copy "$src" "$root/third_party/protovalidate/buf/validate" validate.proto

dir=$(module_dir "$OPENAPIV2_MODULE")
src=$dir/protoc-gen-openapiv2/options
[[ -f $src/annotations.proto && -f $src/openapiv2.proto ]] || fail "$OPENAPIV2_MODULE has no protoc-gen-openapiv2/options protos"
copy "$src" "$root/third_party/openapiv2/protoc-gen-openapiv2/options" annotations.proto openapiv2.proto
