# gpu/lib.sh: what every gpu/*.sh does the same way. Sourced by them, not run.
#
# On the GPU machine (../shared/device/README.md): carry sets install into /tmp/site; unienv installs
# non-editable into $UNIENV_SITE (pip --target from a clean copy of the checkout, as a user's
# `pip install .` would: the package-dir mapping puts tasks/ at unienv.tasks), and every Python runs
# with -P, so the checkout in the current directory never shadows the install.
#
# UNIENV_GPU_REHEARSAL=1 rehearses a script on the CPU (tests/test_gpu_scripts.py does): no carry sets,
# no nvidia-smi, device cpu, tiny env counts, short runs, and an editable install of unienv on this
# machine is hidden, as the GPU machine has none (its import hook would fill in what the install lacks).
#
# Each step logs to $OUT/<step>.log and appends its exit status to $OUT/summary.txt; a failed step is
# recorded and the script goes on to the next, then `finish` exits 1. A failed install stops at once.

set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO" || exit 1
OUT="${OUT:-/tmp/unienv_out}"
mkdir -p "$OUT"
PY="${PY:-python3}"
UNIENV_SITE="${UNIENV_SITE:-/tmp/unienv_site}"
REHEARSAL="${UNIENV_GPU_REHEARSAL:-0}"
FAILED=()

# what the checks run: the GPU defaults, or the rehearsal's tiny ones; each can be overridden
if [ "$REHEARSAL" = 1 ]; then
  DEVICE=cpu
  NUM_ENVS="${NUM_ENVS:-2}"
  BENCH_SECONDS="${BENCH_SECONDS:-0.05}"
  BENCH_ROUNDS="${BENCH_ROUNDS:-1}"
else
  DEVICE=cuda
  NUM_ENVS="${NUM_ENVS:-4096 16384}"
  BENCH_SECONDS="${BENCH_SECONDS:-1}"
  BENCH_ROUNDS="${BENCH_ROUNDS:-2}"
fi
TASKS="${TASKS:-cartpole ant}"
export UNIENV_TEST_DEVICE="$DEVICE" PYTHONUNBUFFERED=1

die() {
  echo "FAILED: $*" | tee -a "$OUT/summary.txt" >&2
  exit 1
}

# carry SET DIR: install a carry set (once per warm machine), then take its environment
carry() {
  [ "$REHEARSAL" = 1 ] && return 0
  [ -f "/tmp/site/$1_env.sh" ] || bash "$2/install.sh" || die "carry set $1 ($2) did not install"
  # shellcheck disable=SC1090
  source "/tmp/site/$1_env.sh"
}

# pytest, from .devcarry/pytest when the machine lacks it
ensure_pytest() {
  "$PY" -c "import pytest" 2> /dev/null && return 0
  [ -d .devcarry/pytest ] || die "no pytest here: carry .devcarry/pytest (pip download pytest pluggy iniconfig)"
  "$PY" -m pip install -q --no-index --no-deps --target /tmp/site/pytest .devcarry/pytest/*.whl \
    || die "pytest did not install"
  export PYTHONPATH="/tmp/site/pytest${PYTHONPATH:+:$PYTHONPATH}"
}

# unienv, non-editable, into $UNIENV_SITE; checks that Python imports that copy, unienv.tasks included
install_unienv() {
  local src
  src="$(mktemp -d)"
  cp -r pyproject.toml README.md unienv tasks "$src/" || die "could not copy the checkout"
  # a copy, so that no build/ left in the checkout leaks stale modules into the install
  "$PY" -m pip install -q --no-deps --no-build-isolation --no-index --upgrade --target "$UNIENV_SITE" "$src" \
    || die "unienv did not install (pip --no-build-isolation needs setuptools >= 68 in $PY)"
  rm -rf "$src"
  export PYTHONPATH="$UNIENV_SITE${PYTHONPATH:+:$PYTHONPATH}"
  if [ "$REHEARSAL" = 1 ]; then
    local hide="$OUT/.no_editable"
    mkdir -p "$hide"
    cat > "$hide/sitecustomize.py" << 'EOF'
import sys  # rehearsal: drop the import hook of an editable unienv install, as on the GPU machine
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
EOF
    export PYTHONPATH="$hide:$PYTHONPATH"
  fi
  "$PY" -P -c "$IMPORT_CHECK" "$UNIENV_SITE" | tee -a "$OUT/env.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || die "the installed unienv does not import"
}
IMPORT_CHECK='import sys, unienv, unienv.tasks, unienv.backends, unienv.bench
assert unienv.__file__.startswith(sys.argv[1]), f"unienv imported from {unienv.__file__}, not {sys.argv[1]}"
print("unienv from", unienv.__file__)'

# the commands, run against the installed unienv: pytest imports it first, so that pytest's
# rootdir on sys.path cannot shadow it, and checks where it came from
PYTEST=("$PY" -P -c "$IMPORT_CHECK
import pytest
sys.exit(pytest.main(sys.argv[2:]))" "$UNIENV_SITE" -q -p no:cacheprovider -rfE)
BENCH=("$PY" -P -m unienv.bench --device "$DEVICE" --seconds "$BENCH_SECONDS" --rounds "$BENCH_ROUNDS")

# record_env: date, GPU and package versions, into $OUT/env.txt
record_env() {
  {
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    [ "$REHEARSAL" = 1 ] || nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    "$PY" -P -c 'import importlib.metadata as m, sys, torch
names = ["torch", "mujoco", "genesis-world", "warp-lang", "mujoco-warp", "gymnasium", "rsl-rl-lib"]
print(sys.version.split()[0], "cuda", torch.cuda.is_available(), *(f"{n} {m.version(n)}" for n in names if n in {d.metadata["Name"] for d in m.distributions()}))'
  } 2>&1 | tee -a "$OUT/env.txt"
  [ "$REHEARSAL" = 1 ] || "$PY" -c "import torch; assert torch.cuda.is_available(), 'torch sees no CUDA device'" \
    || die "no CUDA on this machine"
}

# step NAME SECONDS CMD...: run CMD under a time limit, log it to $OUT/NAME.log, record its status
step() {
  local name=$1 limit=$2
  shift 2
  { printf '== %s:' "$name" && printf ' %q' "$@" && echo; } > "$OUT/$name.log"
  timeout "$limit" "$@" 2>&1 | grep --line-buffered -v -e "frontend_ir" -e "^Module " | tee -a "$OUT/$name.log"
  local status=${PIPESTATUS[0]}
  echo "== $name: exit $status" | tee -a "$OUT/$name.log"
  echo "$name: exit $status" >> "$OUT/summary.txt"
  [ "$status" = 0 ] || FAILED+=("$name")
}

# share SECONDS: a step's time limit; in `all` mode two steps share one call (at most 600 s on the device)
share() {
  if [ "${MODE:-all}" = all ]; then echo "$1"; else echo 540; fi
}

# finish: exit 1 if any step failed
finish() {
  if [ "${#FAILED[@]}" -gt 0 ]; then
    echo "FAILED steps: ${FAILED[*]} (logs in $OUT)" | tee -a "$OUT/summary.txt"
    exit 1
  fi
  echo "all steps passed (logs in $OUT)" | tee -a "$OUT/summary.txt"
}
