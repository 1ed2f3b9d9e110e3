#!/bin/bash
# Genesis on the GPU machine: the conformance suite on CUDA, and raw Genesis vs unienv throughput on the ant.
#
# Prepare, once, on the machine that sends the run (see shared/device/README.md; sets stay out of git):
#   echo /.devcarry/ >> .git/info/exclude                                   # already in .gitignore here
#   ../shared/device/build-carry.sh genesis .devcarry/genesis --lean        # 35 MiB: Genesis 1.4.5 + MuJoCo 4.0.0
#   ../shared/device/build-carry.sh base    .devcarry/base                  # 8 MiB: gymnasium, hydra (unienv imports them)
#   pip download --no-deps --only-binary=:all: -d .devcarry/pytest pytest pluggy iniconfig   # if the remote lacks pytest
#
# Run from the repository root (each mode fits one call of at most 600 s; a fresh machine compiles Genesis's kernels
# first, ~100 s per distinct option set on the H200):
#   send: [".devcarry/genesis", ".devcarry/base", ".devcarry/pytest"]
#   bash gpu/genesis_check.sh contract      # tests/contract on genesis, CUDA (the suite's default device)
#   bash gpu/genesis_check.sh bench         # python -m unienv.bench --backend genesis at 1024 / 4096 / 16384 ant envs
#   bash gpu/genesis_check.sh all           # both, contract first
# While the machine is warm, a second call skips the install (sets in /tmp/site) and reuses the kernel cache.
# Results go to $OUT: contract.log, contract_junit.xml, bench.log, env.txt.
set -uo pipefail
MODE="${1:-all}"
OUT="${OUT:-/tmp/unienv_out}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."

install_sets() {
  if [ ! -f /tmp/site/genesis_env.sh ]; then
    bash .devcarry/genesis/install.sh || { echo "genesis carry set failed to install"; exit 1; }
  fi
  if [ ! -f /tmp/site/base_env.sh ] && [ -d .devcarry/base ]; then
    bash .devcarry/base/install.sh || { echo "base carry set failed to install"; exit 1; }
  fi
  # shellcheck disable=SC1091
  source /tmp/site/genesis_env.sh
  # shellcheck disable=SC1091
  [ -f /tmp/site/base_env.sh ] && source /tmp/site/base_env.sh
  if ! python3 -c "import pytest" 2> /dev/null && [ -d .devcarry/pytest ]; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .devcarry/pytest/*.whl
  fi
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
}

record_env() {
  {
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2> /dev/null
    python3 -c "import sys, torch, genesis, mujoco; print(sys.version.split()[0], 'torch', torch.__version__, \
'genesis', genesis.__version__, 'mujoco', mujoco.__version__, 'cuda', torch.cuda.is_available())"
  } | tee "$OUT/env.txt"
}

run_contract() {
  # The suite's backends take device=None, which is CUDA here; -k genesis leaves mujoco (CPU) out.
  timeout 560 python3 -m pytest tests/contract -k genesis -q -p no:cacheprovider -rfE \
    --junitxml="$OUT/contract_junit.xml" 2>&1 | grep -v "frontend_ir" | tee "$OUT/contract.log"
  echo "contract exit: ${PIPESTATUS[0]}" | tee -a "$OUT/contract.log"
}

run_bench() {
  # the ant's portable observation: Genesis has no MuJoCo cfrc_ext (the mj_fields capability)
  timeout 560 python3 -m unienv.bench --backend genesis --device cuda --task ant \
    --task-option include_cfrc_ext_in_observation=false --num-envs 1024 4096 16384 --seconds 2 --rounds 2 \
    2>&1 | grep -v "frontend_ir" | tee "$OUT/bench.log"
  echo "bench exit: ${PIPESTATUS[0]}" | tee -a "$OUT/bench.log"
}

install_sets
record_env
python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA on this machine'" || exit 1
case "$MODE" in
  contract) run_contract ;;
  bench) run_bench ;;
  all) run_contract && run_bench ;;
  *) echo "usage: bash gpu/genesis_check.sh [contract|bench|all]"; exit 2 ;;
esac
