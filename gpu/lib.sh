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
# What a call leaves in $OUT stays within what the device tool brings back (8 files, no deep folders):
# summary.txt (the environment first), then per step a .log and a .json (and the policy file for
# training); scratch (pytest's XML, Hydra's run dir) goes to $WORK.

set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO" || exit 1
OUT="${OUT:-/tmp/unienv_out}"
PY="${PY:-python3}"
UNIENV_SITE="${UNIENV_SITE:-/tmp/unienv_site}"
WORK="${UNIENV_WORK:-$(dirname "$UNIENV_SITE")/unienv_work}"
mkdir -p "$OUT" "$WORK"
REHEARSAL="${UNIENV_GPU_REHEARSAL:-0}"
FAILED=()

# what the steps run: the GPU defaults, or the rehearsal's tiny ones; each can be overridden
if [ "$REHEARSAL" = 1 ]; then
  DEVICE=cpu
  NUM_ENVS="${NUM_ENVS:-2}"
  BENCH_SECONDS="${BENCH_SECONDS:-0.05}"
  BENCH_ROUNDS="${BENCH_ROUNDS:-1}"
  TRAIN_ENVS="${TRAIN_ENVS:-4}"
  TRAIN_SECONDS="${TRAIN_SECONDS:-1}" # stops on the budget after an iteration or two, as on the card
  TRAIN_EVAL_STEPS="${TRAIN_EVAL_STEPS:-20}"
else
  DEVICE=cuda
  NUM_ENVS="${NUM_ENVS:-4096 16384 65536}"
  BENCH_SECONDS="${BENCH_SECONDS:-0.5}"
  BENCH_ROUNDS="${BENCH_ROUNDS:-2}"
  TRAIN_ENVS="${TRAIN_ENVS:-4096}"
  TRAIN_SECONDS="${TRAIN_SECONDS:-150}"
  TRAIN_EVAL_STEPS="${TRAIN_EVAL_STEPS:-null}" # null: one episode length
fi
TASKS="${TASKS:-cartpole ant}"
TRAIN_TASK="${TRAIN_TASK:-quadruped}"
TRAIN_PRESET="${TRAIN_PRESET:-ppo_$TRAIN_TASK}" # or the off-policy learner's, e.g. crossq_go1
TRAIN_OVERRIDES="${TRAIN_OVERRIDES:-}" # more train.py options, space-separated (train.loop.batch_size=4096 ...)
TRAIN_ITERATIONS="${TRAIN_ITERATIONS:-2000}" # PPO's cap; the time budget ends training first
# each step's time limit (seconds): a call runs at most 600 s, so steps sharing a call must fit in it
CONTRACT_LIMIT="${CONTRACT_LIMIT:-300}"
BENCH_LIMIT="${BENCH_LIMIT:-240}"
TRAIN_LIMIT="${TRAIN_LIMIT:-$((TRAIN_SECONDS + 150))}" # + kernel compile, evaluation, export
# GitPython (rsl_rl's logger imports it) refuses to import where no git executable is found
export UNIENV_TEST_DEVICE="$DEVICE" PYTHONUNBUFFERED=1 GIT_PYTHON_REFRESH=quiet

die() {
  echo "FAILED: $*" | tee -a "$OUT/summary.txt" >&2
  exit 1
}

# modes ALLOWED ARGS...: the script's modes, in the order asked, into MODES (`all`, the default: every
# allowed mode but stage)
modes() {
  local allowed=" $1 " mode
  shift
  MODES=()
  [ $# -gt 0 ] || set -- all
  for mode in "$@"; do
    if [ "$mode" = all ]; then
      for mode in $allowed; do [ "$mode" = stage ] || MODES+=("$mode"); done
    elif [[ "$allowed" == *" $mode "* ]]; then
      MODES+=("$mode")
    else
      die "unknown mode '$mode'; expected some of:$allowed(or all)"
    fi
  done
}

# wants MODE: whether MODE was asked for
wants() {
  [[ " ${MODES[*]} " == *" $1 "* ]]
}

# carry SET DIR: install a carry set (once per warm machine), then take its environment; without
# the set (a machine with the packages installed) the installed packages serve
carry() {
  [ "$REHEARSAL" = 1 ] && return 0
  [ -d "$2" ] || [ -f "/tmp/site/$1_env.sh" ] || return 0
  [ -f "/tmp/site/$1_env.sh" ] || bash "$2/install.sh" || die "carry set $1 ($2) did not install"
  # shellcheck disable=SC1090
  source "/tmp/site/$1_env.sh"
}

# wheels NAME MODULE: MODULE importable, else the wheels in .devcarry/NAME installed into /tmp/site/NAME
# (once per warm machine: a later call finds them there without carrying them again)
wheels() {
  if ! "$PY" -c "import $2" 2> /dev/null && [ ! -d "/tmp/site/$1" ]; then
    [ -d ".devcarry/$1" ] || die "no $2 here: carry .devcarry/$1 (see the script's header)"
    "$PY" -m pip install -q --no-index --no-deps --target "/tmp/site/$1" ".devcarry/$1"/*.whl \
      || die "the $1 wheels did not install"
  fi
  [ -d "/tmp/site/$1" ] && export PYTHONPATH="/tmp/site/$1${PYTHONPATH:+:$PYTHONPATH}"
  return 0
}

# menagerie: the robot model folders that gpu/pack_menagerie.sh packed into $MENAGERIE_CARRY (a tar.xz
# each), unpacked once per warm machine into $MENAGERIE_DIR, which unienv.robots then reads first
# (UNIENV_MENAGERIE_DIR): the GPU machine has none of the asset packages. Without them, nothing to do.
MENAGERIE_CARRY="${MENAGERIE_CARRY:-.devcarry/menagerie}"
MENAGERIE_DIR="${MENAGERIE_DIR:-$([ "$REHEARSAL" = 1 ] && echo "$WORK/menagerie" || echo /tmp/site/menagerie)}"
menagerie() {
  local archive
  for archive in "$MENAGERIE_CARRY"/*.tar.xz; do
    [ -f "$archive" ] || continue
    mkdir -p "$MENAGERIE_DIR" && tar -C "$MENAGERIE_DIR" -xJf "$archive" || die "could not unpack $archive"
  done
  [ -d "$MENAGERIE_DIR" ] && export UNIENV_MENAGERIE_DIR="$MENAGERIE_DIR"
  return 0
}

# robots_found: where unienv.robots finds each carried robot (the carried copy, or a step will refuse it)
robots_found() {
  [ -n "${UNIENV_MENAGERIE_DIR:-}" ] || return 0
  "$PY" -P -c 'import os, sys
from unienv import robots
for name in sorted(os.listdir(sys.argv[1])):
    if os.path.isdir(os.path.join(sys.argv[1], name)) and not name.startswith("."):
        print("menagerie:", name, "from", robots.model_dir(name))' "$UNIENV_MENAGERIE_DIR" 2>&1 | tee -a "$OUT/summary.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || die "the carried Menagerie folders are not found by unienv.robots"
}

# unienv, non-editable, into $UNIENV_SITE; checks that Python imports that copy, unienv.tasks included
install_unienv() {
  local src
  src="$(mktemp -d)"
  cp -r pyproject.toml README.md unienv tasks cfg "$src/" || die "could not copy the checkout"
  # a copy, so that no build/ left in the checkout leaks stale modules into the install
  "$PY" -m pip install -q --no-deps --no-build-isolation --no-index --upgrade --target "$UNIENV_SITE" "$src" \
    || die "unienv did not install (pip's error above; --no-build-isolation needs setuptools >= 68 in $PY)"
  rm -rf "$src"
  export PYTHONPATH="$UNIENV_SITE${PYTHONPATH:+:$PYTHONPATH}"
  if [ "$REHEARSAL" = 1 ]; then
    local hide="$WORK/no_editable"
    mkdir -p "$hide"
    cat > "$hide/sitecustomize.py" << 'EOF'
import sys  # rehearsal: drop the import hook of an editable unienv install, as on the GPU machine
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
EOF
    export PYTHONPATH="$hide:$PYTHONPATH"
  fi
  "$PY" -P -c "$IMPORT_CHECK" "$UNIENV_SITE" | tee -a "$OUT/summary.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || die "the installed unienv does not import"
}
IMPORT_CHECK='import sys, unienv, unienv.tasks, unienv.cfg, unienv.backends, unienv.bench
assert unienv.__file__.startswith(sys.argv[1]), f"unienv imported from {unienv.__file__}, not {sys.argv[1]}"
print("unienv from", unienv.__file__)'

# the commands, run against the installed unienv: pytest imports it first, so that pytest's
# rootdir on sys.path cannot shadow it, and checks where it came from
PYTEST=("$PY" -P -c "$IMPORT_CHECK
import pytest
sys.exit(pytest.main(sys.argv[2:]))" "$UNIENV_SITE" -q -p no:cacheprovider -rfE)
BENCH=("$PY" -P -m unienv.bench --device "$DEVICE" --seconds "$BENCH_SECONDS" --rounds "$BENCH_ROUNDS")

# record_env: date, GPU and package versions, at the top of $OUT/summary.txt
record_env() {
  {
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    [ "$REHEARSAL" = 1 ] || nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    "$PY" -P -c 'import importlib.metadata as m, sys, torch
names = ["torch", "mujoco", "genesis-world", "warp-lang", "mujoco-warp", "gymnasium", "rsl-rl-lib"]
print(sys.version.split()[0], "cuda", torch.cuda.is_available(), *(f"{n} {m.version(n)}" for n in names if n in {d.metadata["Name"] for d in m.distributions()}))'
  } 2>&1 | tee -a "$OUT/summary.txt"
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

# report NAME PYTHON ARGS...: a step's figures from its files, into summary.txt; failing it fails NAME
report() {
  local name=$1
  shift
  "$PY" -P - "$@" 2>&1 | tee -a "$OUT/summary.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || [[ " ${FAILED[*]} " == *" $name "* ]] || FAILED+=("$name")
}

# contract ENGINE PYTEST_ARGS...: the tests on $DEVICE; counts and the head of each failure in contract_ENGINE.json
contract() {
  local name="contract_$1"
  shift
  step "$name" "$CONTRACT_LIMIT" "${PYTEST[@]}" "$@" --junitxml="$WORK/$name.xml"
  report "$name" "$WORK/$name.xml" "$OUT/$name.json" << 'EOF'
import json, sys, xml.etree.ElementTree as ET
xml, out = sys.argv[1:]
root = ET.parse(xml).getroot()
counts = {k: sum(int(s.get(k, 0)) for s in root.iter("testsuite")) for k in ("tests", "failures", "errors", "skipped")}
counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
failed = []
for case in root.iter("testcase"):
    for kind in ("failure", "error"):
        for e in case.findall(kind):
            text = f"{e.get('message') or ''}\n{e.text or ''}".strip()
            failed.append({"test": f"{case.get('classname')}::{case.get('name')}", "kind": kind, "head": text.splitlines()[:15]})
json.dump({**counts, "failed": failed}, open(out, "w"), indent=1)
print(f"contract: {counts['passed']} passed, {counts['failures']} failed, {counts['errors']} errors, {counts['skipped']} skipped")
for f in failed:
    print(f"  {f['kind']}: {f['test']}: {(f['head'] or [''])[0][:160]}")
EOF
}

# bench ENGINE BENCH_ARGS...: python -m unienv.bench on $TASKS x $NUM_ENVS, rows in bench_ENGINE.json
bench() {
  local name="bench_$1"
  shift
  # shellcheck disable=SC2086
  step "$name" "$BENCH_LIMIT" "${BENCH[@]}" --task $TASKS --num-envs $NUM_ENVS --json "$OUT/$name.json" "$@"
  report "$name" "$OUT/$name.json" << 'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
for r in rows:
    graph = f", graph/eager {r['graph_eager_ratio']:.2f}" if "graph_eager_ratio" in r else ""
    print(f"  {r['task']} x{r['num_envs']} on {r['device']}: env {r['env_sps']:,.0f} steps/s, env/raw {r['env_ratio']:.1%}{graph}")
sys.exit(0 if rows else "bench: no rows")
EOF
}

# train ENGINE [HYDRA_OVERRIDES...]: train.py with $TRAIN_PRESET (rsl_rl PPO on $TRAIN_TASK, or the
# off-policy learner's preset) for $TRAIN_SECONDS; its curve, summary and evaluation in
# train_ENGINE.json, the policy in policy_ENGINE.safetensors
train() {
  local engine=$1 name="train_$1" cap=()
  shift
  [[ "$TRAIN_PRESET" == ppo_* ]] && cap=("train.iterations=$TRAIN_ITERATIONS")
  # shellcheck disable=SC2086  # TRAIN_OVERRIDES: options separated by spaces
  step "$name" "$TRAIN_LIMIT" "$PY" -P train.py "train=$TRAIN_PRESET" "backend=$engine" "device=$DEVICE" \
    "num_envs=$TRAIN_ENVS" "${cap[@]}" "train.max_seconds=$TRAIN_SECONDS" \
    "train.eval_steps=$TRAIN_EVAL_STEPS" "train.policy_path=$OUT/policy_$engine.safetensors" \
    "train.metrics_path=$OUT/$name.json" "hydra.run.dir=$WORK/$name" $TRAIN_OVERRIDES "$@"
  sed -i 's/\x1b\[[0-9;]*m//g' "$OUT/$name.log"
  report "$name" "$OUT/$name.json" "$OUT/policy_$engine.safetensors" << 'EOF'
import json, os, statistics, sys
m = json.load(open(sys.argv[1]))
curve, s, e = m["curve"], m.get("summary"), m.get("eval") or {}
if not curve or s is None or not os.path.exists(sys.argv[2]):
    sys.exit(f"train: incomplete ({len(curve)} iterations logged, summary {s is not None}, policy {os.path.exists(sys.argv[2])})")
returns = [r["mean_return"] for r in curve if r["mean_return"] is not None]
k = max(1, min(5, len(returns) // 10))
rate = s["env_steps"] / max(s["train_seconds"], 1e-9)
done = f"{s['iterations']} iterations" if "iterations" in s else f"{s['updates']:,} updates"  # PPO, off-policy
collect = [r["collect_steps_per_s"] for r in curve if "collect_steps_per_s" in r]
collect = f"; collection {statistics.median(collect):,.0f} steps/s (median)" if collect else ""
print(f"train: {m['task']} on {m['backend']} x{m['num_envs']}: {done} ({s['stopped_by']}), "
      f"{s['env_steps']:,} env steps in {s['train_seconds']:.0f} s, {rate:,.0f} steps/s{collect}")
print(f"  return (last 100 episodes): first {[round(r, 2) for r in returns[:k]]}, last {[round(r, 2) for r in returns[-k:]]}")
errors = {k: e["gait"][k] for k in ("lin_vel_error", "yaw_rate_error") if k in e.get("gait", {})}
print(f"  eval: {e.get('episodes')} episodes, return {e.get('return_mean')}, length {e.get('length_mean')}, {errors}")
EOF
}

# finish: exit 1 if any step failed
finish() {
  if [ "${#FAILED[@]}" -gt 0 ]; then
    echo "FAILED steps: ${FAILED[*]} (logs in $OUT)" | tee -a "$OUT/summary.txt"
    exit 1
  fi
  echo "all steps passed (logs in $OUT)" | tee -a "$OUT/summary.txt"
}
