#!/usr/bin/env bash
# The packed artifacts work (make wheel-check; .ci/run). Builds the two distributions'
# sdists and, from them, their wheels (python -m build): turnkeep, the client and the
# shared core, and turnkeep-server (deploy/server/), the service's code; checks that
# both install the one package turnkeep and nothing beside it, that the client's carries
# none of the server's code and that together they hold every module and data file;
# then, in fresh
# virtualenvs under a temporary directory and from a directory outside the source tree
# (so nothing is imported from it):
#   client  pip install <wheel>: turnkeep.client, turnkeep.cli and turnkeep.acp import,
#           celery, fastapi and psycopg do not, turnkeep.api and the rest of the
#           server's code are not there; `turnkeep --help` works and the server
#           commands say to install turnkeep-server (exit 2, no traceback)
#   server  pip install <server wheel> <wheel>: with the installed entry points only, a fresh
#           database is created and migrated (turnkeep dev --migrate-only, then the
#           image's `turnkeep migrate`), `turnkeep dev --once` runs the demo turn to
#           completed, and the client venv's `turnkeep submit --wait` has a turn
#           completed by `turnkeep api` and `turnkeep worker` started directly
# Dependencies resolve from the index within requirements.lock's pins (as constraints),
# so the check runs what the image runs. Postgres: the machine's on
# TURNKEEP_WHEEL_POSTGRES (127.0.0.1:5432, user postgres, trust; `make services`), a
# database of its own dropped at the end; Redis: a private redis-server on a free port.
# TURNKEEP_WHEEL_KEEP=1 keeps the temporary directory (logs, venvs) for a look.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
builder="${TURNKEEP_BUILD_PYTHON:-$repo/.venv/bin/python}"
base_python="${TURNKEEP_WHEEL_PYTHON:-python3}"
pg="${TURNKEEP_WHEEL_POSTGRES:-127.0.0.1:5432}"
redis_server="${TURNKEEP_WHEEL_REDIS_SERVER:-$(command -v redis-server || true)}"
keep="${TURNKEEP_WHEEL_KEEP:-}"
work="$(mktemp -d "${TMPDIR:-/tmp}/turnkeep-wheel.XXXXXX")"
db="turnkeep_wheel_$(tr 'A-Z' 'a-z' <<<"${work##*.}" | tr -dc 'a-z0-9')_$$"
run="$work/run"
mkdir -p "$run"
started=$SECONDS
phase_start=$SECONDS
pids=()

# the processes' own settings only: nothing of the caller's environment points them
# elsewhere (a TURNKEEP_DATABASE_URL, a PYTHONPATH into the source tree)
while IFS= read -r var; do unset "$var"; done < <(compgen -e | grep -E '^(TURNKEEP_|PYTHON)')
export PIP_DISABLE_PIP_VERSION_CHECK=1

say() { echo "wheel-check: $*"; }
phase() {
  say "$1 ($((SECONDS - phase_start)) s)"
  phase_start=$SECONDS
}
die() {
  echo "wheel-check: FAILED: $*" >&2
  exit 1
}

cleanup() {
  local rc=$?
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ -x "$work/server/bin/python" ]; then
    "$work/server/bin/python" - "$pg" "$db" <<'PY' || true
import sys

import psycopg

with psycopg.connect(f"postgresql://postgres@{sys.argv[1]}/postgres", autocommit=True) as conn:
    conn.execute(f'DROP DATABASE IF EXISTS "{sys.argv[2]}" WITH (FORCE)')
PY
  fi
  if [ "$rc" -ne 0 ]; then
    for log in "$work"/*.log "$run"/.run/*.log; do
      [ -s "$log" ] || continue
      echo "---- ${log#"$work"/} (last 40 lines)" >&2
      tail -n 40 "$log" >&2
    done
  fi
  if [ "$keep" = 1 ]; then
    say "kept $work"
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  "$base_python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# -- build ------------------------------------------------------------------------------
"$builder" -c 'import build' 2>/dev/null \
  || die "$builder has no 'build' module: make install (the dev extra brings it)"
"$builder" -m build --outdir "$work/dist" "$repo" >"$work/build.log" 2>&1 \
  || die "python -m build failed (build.log above)"
"$builder" -m build --outdir "$work/dist-server" "$repo/deploy/server" >>"$work/build.log" 2>&1 \
  || die "python -m build deploy/server failed (build.log above)"
wheel=$(ls "$work"/dist/turnkeep-*.whl)
sdist=$(ls "$work"/dist/turnkeep-*.tar.gz)
server_wheel=$(ls "$work"/dist-server/turnkeep_server-*.whl)
phase "built $(basename "$sdist") and, from it, $(basename "$wheel"); $(basename "$server_wheel")"

# one import root: the wheel installs the package turnkeep and nothing beside it; every
# module of its folders (api/, worker/, ... are turnkeep's subpackages through the links
# turnkeep/api -> ../api, pyproject.toml) and data files are in it (the wheel was built
# from the sdist, so they are in that too), no tests
"$base_python" - "$repo" "$wheel" "$server_wheel" <<'PY' || die "the wheels miss files or install more than turnkeep (above)"
import os
import sys
import tomllib
import zipfile
from pathlib import Path

repo, client_wheel, server_wheel = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
client = set(zipfile.ZipFile(client_wheel).namelist())
server = set(zipfile.ZipFile(server_wheel).namelist())
names = client | server
problems = []
for wheel, found in (("turnkeep", client), ("turnkeep-server", server)):
    tops = {n.split("/")[0] for n in found if not n.split("/")[0].endswith(".dist-info")}
    if tops != {"turnkeep"}:
        problems.append(f"{wheel}'s top-level names are {sorted(tops)}, not ['turnkeep']")
SERVER = ("turnkeep/api/", "turnkeep/worker/", "turnkeep/store/", "turnkeep/recovery/")
for name in sorted(n for n in client if n.startswith(SERVER)):
    problems.append(f"the client's wheel carries the server's {name}")
for name in sorted(n for n in server if n.startswith("turnkeep/") and not n.startswith(SERVER)):
    problems.append(f"turnkeep-server's wheel carries the client's {name}")
data = {}
for project in (repo, repo / "deploy" / "server"):
    config = tomllib.loads((project / "pyproject.toml").read_text())["tool"]["setuptools"]
    data.update(config.get("package-data", {}))


def files(top: Path):
    for root, _, found in os.walk(top, followlinks=True):
        if "__pycache__" not in root:
            yield from (Path(root) / f for f in found)


def where(package: str) -> Path:
    return repo.joinpath(*package.split("."))


wanted = {p for p in files(repo / "turnkeep") if p.suffix == ".py"}
for package, globs in data.items():
    for pattern in globs:
        found = set(where(package).glob(pattern))
        if not found:
            problems.append(f"package-data {package}: {pattern} matches no file")
        wanted |= found
# what the installed service reads at run time, whatever package-data says: the SQL,
# alembic's environment and the migrations, the console's assets
store, api = repo / "turnkeep" / "store", repo / "turnkeep" / "api"
wanted |= {p for p in files(store) if p.suffix == ".sql"}
wanted |= {p for p in files(store / "migrations") if p.suffix not in (".pyc", ".pyo")}
wanted |= set(files(api / "console"))
wanted = {p.relative_to(repo).as_posix() for p in wanted}
for must in ("turnkeep/store/migrations/env.py", "turnkeep/store/migrations/script.py.mako"):
    if must not in wanted:
        problems.append(f"{must} is not in the source tree")
for prefix in ("turnkeep/store/migrations/versions/", "turnkeep/api/console/"):
    if not any(p.startswith(prefix) for p in wanted):
        problems.append(f"no file under {prefix}")
if not any(p.startswith("turnkeep/store/") and p.endswith(".sql") for p in wanted):
    problems.append("no SQL file under turnkeep/store/")
missing = sorted(wanted - names)
stray = sorted(n for n in names if n.startswith("tests/"))
for name in missing:
    print(f"missing from the wheel: {name}")
for name in stray:
    print(f"in the wheel, and should not be: {name}")
for problem in problems:
    print(problem)
sys.exit(1 if missing or stray or problems else 0)
PY
phase "both wheels install turnkeep only, the client's none of the server's code; together every module, the SQL, the migrations, the console's assets"

# the lock's pins as constraints: what the image installs, without its hashes
grep -E '^[A-Za-z0-9][A-Za-z0-9._-]*(\[[^]]*\])?==' "$repo/requirements.lock" \
  | sed -E 's/[[:space:]]*\\$//' >"$work/constraints.txt"

venv() {
  local name=$1
  shift
  "$base_python" -m venv "$work/$name"
  "$work/$name/bin/pip" install -q -c "$work/constraints.txt" "$@" >"$work/pip-$name.log" 2>&1 \
    || die "pip install $* into a clean venv failed (pip-$name.log above)"
  "$work/$name/bin/pip" check >>"$work/pip-$name.log" 2>&1 || die "pip check in the $name venv"
}

# -- the client alone --------------------------------------------------------------------
venv client "$wheel"
phase "client venv: pip install $(basename "$wheel")"
cd "$run"
client="$work/client/bin"
"$client/python" - "$work/client" <<'PY' || die "the client-only install (above)"
import importlib
import importlib.util
import sys

import turnkeep
import turnkeep.acp
import turnkeep.cli
import turnkeep.client

assert turnkeep.__file__.startswith(sys.argv[1]), f"turnkeep imported from {turnkeep.__file__}"
for name in ("turnkeep.api", "turnkeep.worker", "turnkeep.store", "turnkeep.recovery"):
    if importlib.util.find_spec(name) is not None:
        sys.exit(f"the client-only install has the server's {name}")
for name in ("celery", "fastapi", "psycopg", "sqlalchemy", "uvicorn"):
    try:
        importlib.import_module(name)
    except ImportError:
        continue
    sys.exit(f"the client-only install imports {name}")
PY
"$client/turnkeep" --help >"$work/client-help.log" 2>&1 || die "turnkeep --help (client-only)"
for command in "dev --migrate-only" "api" "worker" "migrate" "tokens list"; do
  # shellcheck disable=SC2086 # the command's words
  if "$client/turnkeep" $command >"$work/client-refusal.log" 2>&1; then
    die "turnkeep $command ran in a client-only install"
  else
    rc=$?
  fi
  [ "$rc" -eq 2 ] && grep -q "pip install turnkeep-server" "$work/client-refusal.log" \
    && ! grep -q Traceback "$work/client-refusal.log" \
    || die "turnkeep $command, client-only: exit $rc, $(cat "$work/client-refusal.log")"
done
phase "client-only: turnkeep.client imports without celery, fastapi, psycopg or the server's code; server commands name turnkeep-server"

# -- the server ------------------------------------------------------------------------
venv server "$server_wheel" "$wheel"
phase "server venv: pip install $(basename "$server_wheel") $(basename "$wheel")"
server="$work/server/bin"
[ -n "$redis_server" ] || die "no redis-server on PATH (apt-get install redis-server, or set TURNKEEP_WHEEL_REDIS_SERVER)"
(exec 3<>"/dev/tcp/${pg%:*}/${pg##*:}") 2>/dev/null \
  || die "no Postgres answers on $pg (make services, or set TURNKEEP_WHEEL_POSTGRES=host:port)"
redis_port=$(free_port)
"$redis_server" --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
  --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null && break; sleep 0.1; done

export TURNKEEP_MIGRATE_URL="postgresql+psycopg://postgres@$pg/$db"
export TURNKEEP_DATABASE_URL="postgresql+psycopg://turnkeep_app@$pg/$db"
export TURNKEEP_REDIS_URL="redis://127.0.0.1:$redis_port/0"
"$server/turnkeep" dev --migrate-only >"$work/migrate.log" 2>&1 || die "turnkeep dev --migrate-only"
"$server/turnkeep" migrate >>"$work/migrate.log" 2>&1 || die "turnkeep migrate"
phase "a fresh database $db created and migrated (turnkeep dev --migrate-only; turnkeep migrate)"

"$server/turnkeep" dev --once --port "$(free_port)" >"$work/dev.log" 2>&1 \
  || die "turnkeep dev --once: the demo turn did not complete (dev.log above)"
grep -q "^demo turn completed" "$work/dev.log" || die "turnkeep dev --once said no 'demo turn completed'"
phase "turnkeep dev --once: migrated, API, workers and beat started, the demo turn completed"

# the processes as an operator runs them, and the client-only command against them
token_json=$("$server/turnkeep" tokens new --tenant wheel --subject check --json)
TURNKEEP_TOKENS=$("$server/python" -c 'import json, sys; print(json.load(sys.stdin)["TURNKEEP_TOKENS"])' <<<"$token_json")
token=$("$server/python" -c 'import json, sys; print(json.load(sys.stdin)["token"])' <<<"$token_json")
export TURNKEEP_TOKENS
api_port=$(free_port)
"$server/turnkeep" api --host 127.0.0.1 --port "$api_port" >"$work/api.log" 2>&1 &
pids+=($!)
"$server/turnkeep" worker -l INFO -n "wheel@%h" >"$work/worker.log" 2>&1 &
pids+=($!)
url="http://127.0.0.1:$api_port"
"$client/python" - "$url/readyz" <<'PY' || die "turnkeep api did not answer /readyz (api.log above)"
import sys
import time

import httpx

end = time.monotonic() + 120
while time.monotonic() < end:
    try:
        if httpx.get(sys.argv[1], timeout=5).status_code == 200:
            sys.exit(0)
    except httpx.HTTPError:
        pass
    time.sleep(0.5)
sys.exit(1)
PY
TURNKEEP_URL="$url" TURNKEEP_TOKEN="$token" "$client/turnkeep" submit "wheel-$$" demo \
  "What is the weather in Lisbon?" --wait --timeout 180 --json >"$work/submit.log" 2>&1 \
  || die "turnkeep submit --wait (client-only) against turnkeep api and worker (submit.log above)"
state=$("$client/python" -c 'import json, sys; print(json.load(sys.stdin)["state"])' <"$work/submit.log")
[ "$state" = completed ] || die "the submitted turn ended $state"
phase "turnkeep api + turnkeep worker; the client-only turnkeep submit --wait: completed"
say "passed in $((SECONDS - started)) s"
