#!/usr/bin/env bash
# The README's demo (`arena run examples/demo.toml`) on any machine with Python: it prepares the
# sample bots that need more than Python, and seats only those that can run.
#   - nodejs: `npm ci --prefix sample_bots/js` (needs Node.js >= 18 and npm);
#   - cpp: `bash sample_bots/cpp/build.sh` (needs Debian's gRPC C++ toolchain: scripts/setup.sh).
# A bot that cannot be prepared is left out of the tournament, said in one line with the reason
# (`demo: left out nodejs (…); cpp (…)`), and the others play as many games as the full demo, in more
# duplicate pairs a pairing (output: arena-out/demo-without-…);
# with every bot seated this is exactly `arena run examples/demo.toml` (output: arena-out/demo).
# Either way every seated bot runs sandboxed, as demo.toml says (bubblewrap: Debian's `bubblewrap`,
# installed first when missing and this user may; without it arena run stops at once with one line
# naming the package): the generated config keeps
# each bot's table, its own folder (cwd) included, and sits beside demo.toml so those paths stay right.
# Run it with the project installed (`pip install -e .`, the README's command does). Extra arguments
# go to `arena run`. Exit status: arena run's.
set -euo pipefail
cd "$(dirname "$0")/.."
left=()

# The bots' sandbox: Debian's bubblewrap, installed here when missing and this user may (root or sudo),
# as the README's test command does through scripts/setup.sh; otherwise arena run says in one line
# which package to install.
need_bwrap() {
  command -v bwrap >/dev/null && return 0
  command -v apt-get >/dev/null || return 0
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    sudo -n true 2>/dev/null || return 0
    sudo="sudo -n"
  fi
  echo "demo: installing Debian's bubblewrap (the bots' sandbox)" >&2
  local log
  log=$(mktemp)
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      bubblewrap; } >"$log" 2>&1 || {
    # apt's own last words say why (no network, a broken mirror, a lock held): show them, briefly.
    echo "demo: could not install bubblewrap; apt said:" >&2
    grep -E '^(E|W|Err):' "$log" | tail -3 | sed 's/^/  /' >&2
  }
  rm -f "$log"
}
need_bwrap

why_nodejs() {
  command -v node >/dev/null || { echo "no node: install Node.js >= 18 and npm"; return; }
  command -v npm >/dev/null || { echo "no npm: install npm"; return; }
  local major
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  [ "$major" -ge 18 ] || { echo "node $major is older than 18"; return; }
  local out
  if ! out=$(npm ci --prefix sample_bots/js --no-audit --no-fund --loglevel=error 2>&1); then
    echo "npm ci --prefix sample_bots/js failed: $(tail -1 <<<"$out")"
  fi
}

why_cpp() {
  local out
  if ! out=$(bash sample_bots/cpp/build.sh 2>&1); then
    echo "$(tail -1 <<<"$out" | sed 's/^sample_bots\/cpp\/build.sh: //')"
  fi
}

why=$(why_nodejs)
if [ -n "$why" ]; then left+=("nodejs ($why)"); fi
why=$(why_cpp)
if [ -n "$why" ]; then left+=("cpp ($why)"); fi

if [ ${#left[@]} -eq 0 ]; then
  exec arena run examples/demo.toml "$@"
fi
names=$(printf '%s\n' "${left[@]}" | cut -d' ' -f1 | paste -sd- -)
config="examples/.demo-without-$names.toml"  # beside demo.toml: its relative paths stay right (git-ignored)
python3 - "$config" "$names" <<'EOF'
import re
import sys
from pathlib import Path

config, names = sys.argv[1], sys.argv[2].split("-")
head, *bots = Path("examples/demo.toml").read_text().split("\n[[bots]]\n")
kept = [b for b in bots if not any(f'name = "{n}"\n' in b for n in names)]
head = head.replace('output = "../arena-out/demo"', f'output = "../arena-out/demo-without-{"-".join(names)}"')
head = head.replace('name = "demo"', f'name = "demo-without-{"-".join(names)}"')
# As many games as the full demo: fewer pairings play more duplicate pairs each (an even count), so the
# board tells the seated bots apart as well as the full one does (3 bots: 3 pairings of 20 games).
gpp = int(re.search(r"^games_per_pairing = (\d+)", head, re.M).group(1))
games = gpp * len(bots) * (len(bots) - 1) // 2
pairings = len(kept) * (len(kept) - 1) // 2
more = max(gpp, 2 * round(games / pairings / 2))
head = re.sub(r"^games_per_pairing = \d+ *#.*$", f"games_per_pairing = {more}  # {games} games, as the full demo",
              head, count=1, flags=re.M)
Path(config).write_text("\n[[bots]]\n".join([head, *kept]))
EOF
echo "demo: left out $(printf '%s; ' "${left[@]}" | sed 's/; $//'); the other sample bots play" >&2
exec arena run "$config" "$@"
