#!/usr/bin/env bash
# Installs the Claude Code CLI (a real client for tests/fakes) from the npm registry into a
# cache outside the checkout, only when missing (idempotent). The native binary comes in an
# optional dependency; no postinstall step is needed (../shared/recipes/claude-code-client.md).
# Prints nothing but progress; exits non-zero on failure.
set -euo pipefail

# Each release in a folder of its own, `<dir>-<release>` (tests/claude_code.py finds it there).
VERSION="${ECTX_CLAUDE_CODE_VERSION:-2.1.332}"
root="${ECTX_CLAUDE_CODE_DIR:-$HOME/.cache/ectx-claude-code}-$VERSION"
stamp="$root/.installed-$VERSION"

if [ -f "$stamp" ] && [ -x "$root/node_modules/.bin/claude" ]; then
  exit 0
fi

echo "installing Claude Code $VERSION into $root"
# A half-finished install is never reused: build in a scratch directory, then move it in place.
work="$root.partial.$$"
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
cd "$work"

echo '{"name":"ectx-claude-code","private":true}' > package.json
npm install --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$VERSION"
# --version runs offline; it proves the native part is there before the cache is trusted.
DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 HOME="$work" \
  "$work/node_modules/.bin/claude" --version >/dev/null
rm -rf "$work/.claude" "$work/.claude.json"
touch "$work/.installed-$VERSION"
trap - EXIT
rm -rf "$root"
mv "$work" "$root"
echo "Claude Code $VERSION ready: $root/node_modules/.bin/claude"
