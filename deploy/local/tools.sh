#!/usr/bin/env bash
# tools.sh installs the pinned code-generation and lint tools into GOBIN
# (default: $(go env GOPATH)/bin), skipping any tool whose binary is already
# at the pinned version. Every version the build depends on is listed here and
# nowhere else; bump one line and `make tools` converges.
set -euo pipefail

BUF_VERSION=1.75.0
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
GRPC_GATEWAY_VERSION=v2.33.0
SQLC_VERSION=v1.31.1
GOLANGCI_LINT_VERSION=v2.15.0
GRPCURL_VERSION=v1.9.4
GRPC_HEALTH_PROBE_VERSION=v0.4.63

GOBIN=${GOBIN:-$(go env GOPATH)/bin}
export GOBIN
mkdir -p "$GOBIN"

log() { printf 'tools: %s\n' "$*" >&2; }

# have NAME VERSION_SUBSTRING CMD... : true when NAME is installed and CMD's
# output mentions the version.
have() {
  local bin=$GOBIN/$1 want=$2
  shift 2
  [[ -x $bin ]] || return 1
  "$bin" "$@" 2>&1 | grep -qF -- "$want"
}

# go_version_of BIN: the module version recorded in a Go binary's build info.
go_version_of() { go version -m "$1" 2>/dev/null | awk '$1=="mod"{print $3; exit}'; }

install_go() { # name version pkg
  local name=$1 version=$2 pkg=$3
  if [[ -x $GOBIN/$name && $(go_version_of "$GOBIN/$name") == "$version" ]]; then
    return 0
  fi
  log "installing $name $version"
  go install "$pkg@$version"
}

install_buf() {
  if have buf "$BUF_VERSION" --version; then return 0; fi
  # buf from npm is a prebuilt binary (seconds instead of minutes to compile);
  # fall back to compiling it when npm is missing.
  if command -v npm >/dev/null 2>&1; then
    local dir=${XDG_CACHE_HOME:-$HOME/.cache}/switchboard/buf-$BUF_VERSION
    log "installing buf $BUF_VERSION (npm)"
    if npm install --silent --no-audit --no-fund --prefix "$dir" "@bufbuild/buf@$BUF_VERSION" >&2 &&
      [[ -x $dir/node_modules/.bin/buf ]]; then
      ln -sf "$dir/node_modules/@bufbuild/buf-linux-x64/bin/buf" "$GOBIN/buf" 2>/dev/null ||
        ln -sf "$dir/node_modules/.bin/buf" "$GOBIN/buf"
      have buf "$BUF_VERSION" --version && return 0
    fi
  fi
  log "installing buf $BUF_VERSION (go install)"
  go install "github.com/bufbuild/buf/cmd/buf@v$BUF_VERSION"
}

# Usage: tools.sh [all | GROUP...] with groups buf protoc sqlc lint grpcurl probe.
if [[ $# -eq 0 || $1 == all ]]; then set -- buf protoc sqlc lint grpcurl probe; fi

for t in "$@"; do
  case $t in
  buf) install_buf ;;
  protoc)
    install_go protoc-gen-go "$PROTOC_GEN_GO_VERSION" google.golang.org/protobuf/cmd/protoc-gen-go
    install_go protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION" google.golang.org/grpc/cmd/protoc-gen-go-grpc
    install_go protoc-gen-grpc-gateway "$GRPC_GATEWAY_VERSION" github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway
    install_go protoc-gen-openapiv2 "$GRPC_GATEWAY_VERSION" github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2
    ;;
  sqlc) install_go sqlc "$SQLC_VERSION" github.com/sqlc-dev/sqlc/cmd/sqlc ;;
  lint) install_go golangci-lint "$GOLANGCI_LINT_VERSION" github.com/golangci/golangci-lint/v2/cmd/golangci-lint ;;
  grpcurl) install_go grpcurl "$GRPCURL_VERSION" github.com/fullstorydev/grpcurl/cmd/grpcurl ;;
  probe) install_go grpc-health-probe "$GRPC_HEALTH_PROBE_VERSION" github.com/grpc-ecosystem/grpc-health-probe ;;
  *) log "unknown tool group $t"; exit 2 ;;
  esac
done
