#!/usr/bin/env bash
# Installs what cellrate-server's Python client test needs, if missing: grpcio and xds-protos
# (the stubs of Envoy's protos, envoy.service.ratelimit.v3) from PyPI.
set -euo pipefail
if python3 -c 'import grpc, envoy.service.ratelimit.v3.rls_pb2_grpc' 2>/dev/null; then
  echo "installed"
else
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore grpcio xds-protos
fi
