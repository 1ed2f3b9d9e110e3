#!/bin/bash
# MuJoCo Warp on the GPU machine: the conformance suite and the mjwarp tests on CUDA, then raw mujoco_warp
# stepping (write ctrl, graph-launched steps, read qpos/qvel) vs unienv's backend and env step on the ant.
#
# Prepare, once, on the machine that sends the runs (see shared/device/README.md; sets stay out of git):
#   echo /.devcarry/ >> .git/info/exclude
#   ../shared/device/build-carry.sh mjwarp .devcarry/mjwarp     # part1 40 MiB + part2 36 MiB: two runs
#   ../shared/device/build-carry.sh base   .devcarry/base       # 8 MiB: gymnasium, hydra (unienv imports them)
#
# Two calls back to back (the second within ~30 s, while the machine is warm; /tmp/mjw_stage must survive):
#   run 1  carry [".devcarry/mjwarp/part1"]                     command: bash gpu/mjwarp_check.sh stage
#   run 2  carry [".devcarry/mjwarp/part2", ".devcarry/base"]   command: bash gpu/mjwarp_check.sh all
# If run 2 says "warp.so.xz.part0 not found", the machine was fresh: make both runs again.
# Modes: stage | contract | bench | all. A fresh machine compiles mujoco_warp's kernels first (~45 s per model).
# Results go to $OUT: contract.log, bench.log, env.txt.
set -uo pipefail
MODE="${1:-all}"
OUT="${OUT:-/tmp/unienv_out}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."

if [ "$MODE" = stage ]; then
  exec bash .devcarry/mjwarp/part1/stage.sh
fi

if [ ! -f /tmp/site/mjwarp_env.sh ]; then
  bash .devcarry/mjwarp/part2/install.sh || { echo "mjwarp carry set failed to install"; exit 1; }
fi
if [ ! -f /tmp/site/base_env.sh ] && [ -d .devcarry/base ]; then
  bash .devcarry/base/install.sh || { echo "base carry set failed to install"; exit 1; }
fi
source /tmp/site/mjwarp_env.sh
[ -f /tmp/site/base_env.sh ] && source /tmp/site/base_env.sh
python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/site/unienv . \
  || { echo "unienv failed to install"; exit 1; }
export PYTHONPATH="/tmp/site/unienv:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c \
  'import torch, warp, mujoco, mujoco_warp; print("torch", torch.__version__, "warp", warp.config.version, "mujoco", mujoco.__version__, "mujoco_warp", mujoco_warp.__version__)'; } \
  | tee "$OUT/env.txt"

status=0
if [ "$MODE" = contract ] || [ "$MODE" = all ]; then
  # the suite picks CUDA for mjwarp when torch sees a GPU (tests/contract/conftest.py)
  python3 -m pytest -q -p no:cacheprovider -k mjwarp tests/contract tests/backends/test_mjwarp.py 2>&1 \
    | tee "$OUT/contract.log" || status=1
fi
if [ "$MODE" = bench ] || [ "$MODE" = all ]; then
  python3 -m unienv.bench --backend mjwarp --task ant --num-envs 1024 4096 16384 2>&1 \
    | grep -v '^Module ' | tee "$OUT/bench.log" || status=1
fi
exit $status
