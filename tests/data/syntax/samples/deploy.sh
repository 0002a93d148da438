#!/usr/bin/env bash
# Deploy the current build to a target host and restart the service.
set -euo pipefail

readonly TARGET_DIR=/srv/app
RETRIES=3

log() {
  printf '%s %s\n' "$(date +%T)" "$*" >&2
}

# Copies the build directory to the host.
function upload {
  local host=$1
  rsync -az --delete build/ "${host}:${TARGET_DIR}/"
}

restart_service() {
  local host=$1
  for attempt in $(seq "$RETRIES"); do
    if ssh "$host" systemctl restart app; then
      log "restarted on ${host} (attempt ${attempt})"
      return 0
    fi
  done
  return 1
}

main() {
  local host=${1:?usage: deploy.sh HOST}
  upload "$host"
  restart_service "$host"
}

main "$@"
