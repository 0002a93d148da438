#!/usr/bin/env bash
# Installs code-server 4.100.3 (the VS Code workbench) into a cache outside
# the checkout, only when missing (idempotent). Works with registry access only: the packages'
# postinstall scripts download from GitHub, so they are skipped and the native parts rebuilt
# (see ../shared/recipes/vscode-e2e.md). Prints nothing but progress; exits non-zero on failure.
set -euo pipefail

VERSION="4.100.3"
root="${ECTX_CODE_SERVER_DIR:-$HOME/.cache/ectx-code-server}"
stamp="$root/.installed-$VERSION"

if [ -f "$stamp" ] && [ -x "$root/node_modules/.bin/code-server" ]; then
  exit 0
fi
command -v rg >/dev/null 2>&1 || { echo "ripgrep (rg) is required: apt-get install ripgrep" >&2; exit 1; }

echo "installing code-server $VERSION into $root (about a minute)"
# A half-finished install is never reused: build in a scratch directory, then move it in place.
work="$root.partial.$$"
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
cd "$work"

export npm_config_unsafe_perm=true npm_config_yes=true npm_config_fund=false npm_config_audit=false
npm_q=(--no-audit --no-fund --loglevel=error)
echo '{"name":"ectx-code-server","private":true}' > package.json
npm install "${npm_q[@]}" "code-server@$VERSION" --ignore-scripts
npm rebuild "${npm_q[@]}" argon2 --dangerously-allow-all-scripts

vs="$work/node_modules/code-server/lib/vscode"
cd "$vs"
npm install "${npm_q[@]}" --omit=dev --ignore-scripts
mkdir -p node_modules/@vscode/ripgrep/bin
cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
# node-pty's own post-install step fails on a compile_commands helper; pty.node is built anyway.
npm rebuild "${npm_q[@]}" kerberos @vscode/deviceid @vscode/spdlog native-watchdog node-pty \
  --dangerously-allow-all-scripts || true
ln -sfn node_modules node_modules.asar
(cd bin/remote-cli && ln -sfn code-linux.sh code-server)
(cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
(cd extensions && npm install "${npm_q[@]}" --omit=dev --dangerously-allow-all-scripts)

cd "$work"
"$work/node_modules/.bin/code-server" --version >/dev/null
touch "$work/.installed-$VERSION"
trap - EXIT
rm -rf "$root"
mv "$work" "$root"
echo "code-server $VERSION ready: $root/node_modules/.bin/code-server"
