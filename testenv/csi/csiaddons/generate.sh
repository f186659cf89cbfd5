#!/usr/bin/env bash
# Regenerates the Go code of the csi-addons protos here (committed, so that building testenv
# needs no protoc). Needs protoc (Debian: protobuf-compiler) and the two Go plugins:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.5
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
set -euo pipefail
cd "$(dirname "$0")"
for p in identity fence; do
  protoc -I . --go_out=. --go_opt=paths=source_relative \
    --go-grpc_out=. --go-grpc_opt=paths=source_relative "$p/$p.proto"
done
