#!/usr/bin/env bash
# Installs what cellrate-server's Python client tests need, if missing: grpcio and xds-protos
# (the stubs of Envoy's protos, envoy.service.ratelimit.v3) and redis (the Redis client
# package) from PyPI.
set -euo pipefail
missing=()
python3 -c 'import grpc, envoy.service.ratelimit.v3.rls_pb2_grpc' 2>/dev/null || missing+=(grpcio xds-protos)
python3 -c 'import redis' 2>/dev/null || missing+=(redis)
if [ ${#missing[@]} -eq 0 ]; then
  echo "installed"
else
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "${missing[@]}"
fi
