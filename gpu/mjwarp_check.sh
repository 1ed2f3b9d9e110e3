#!/bin/bash
# MuJoCo Warp on the GPU machine, one mode or several per device call, in the order given:
#   stage     park the first part of the mjwarp carry set (a call of its own, before the others)
#   contract  the conformance suite and tests/backends/test_mjwarp.py on CUDA
#   bench     raw mujoco_warp vs unienv's backend and env step, and the env step as one CUDA graph vs
#             eager (python -m unienv.bench): TASKS="cartpole ant" at NUM_ENVS="4096 16384 65536"
#   train     train.py, rsl_rl PPO on TRAIN_TASK=quadruped (velocity tracking), TRAIN_ENVS=4096 envs, for
#             TRAIN_SECONDS=150 s of training, then a deterministic evaluation of the saved policy
#   all       contract bench train (the rehearsal; on the card more than one call holds, see README)
#
# Prepare, once, on the machine that sends the runs (see ../shared/device/README.md; .devcarry/ is git-ignored):
#   ../shared/device/build-carry.sh mjwarp .devcarry/mjwarp     # part1 40 MiB + part2 36 MiB: two calls
#   ../shared/device/build-carry.sh base   .devcarry/base       # 8 MiB: gymnasium, hydra (unienv needs them)
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 -d .devcarry/rsl_rl \
#     rsl-rl-lib==5.5.1 tensordict==0.15.3 pyvers==0.2.3 GitPython gitdb smmap safetensors==0.8.0   # for train (the machine has
#     torch 2.11, pytest, tensorboard, onnx, onnxscript; tensordict 0.15 needs torch >= 2.11)
#
# The calls on a machine without network access (gpu/README.md describes the scripts):
#   carry [".devcarry/mjwarp/part1"]                                        bash gpu/mjwarp_check.sh stage
#   carry [".devcarry/mjwarp/part2", ".devcarry/base", ".devcarry/rsl_rl"]  bash gpu/mjwarp_check.sh bench train
#   carry [".devcarry/menagerie"]  TRAIN_TASK=go1 bash gpu/mjwarp_check.sh train   # a real robot: gpu/pack_menagerie.sh first
# The second within ~30 s of the first, while the machine is warm (/tmp/mjw_stage must survive); if it says
# "warp.so.xz.part0 not found", the machine was fresh: make both again. Later calls on the warm machine need
# no carry (e.g. bash gpu/mjwarp_check.sh contract). A fresh machine compiles mujoco_warp's kernels first
# (~45 s per model). CONTRACT_K narrows the tests (a pytest -k expression); TASKS, NUM_ENVS, BENCH_SECONDS,
# BENCH_ROUNDS, TRAIN_* and the *_LIMIT step timeouts are in gpu/lib.sh. Results in $OUT: summary.txt, and
# per step <step>_mjwarp.log and .json (train also policy_mjwarp.safetensors). Exits 1 if any step fails.
# CPU rehearsal (no carry sets, Warp's CPU device, tiny counts): UNIENV_GPU_REHEARSAL=1 bash gpu/mjwarp_check.sh all
source "$(dirname "$0")/lib.sh"
modes "stage contract bench train" "$@"
if wants stage; then
  [ "${#MODES[@]}" = 1 ] || die "stage is a call of its own (the set's second part comes in the next call)"
  [ "$REHEARSAL" = 1 ] && exit 0
  [ -d .devcarry/mjwarp/part1 ] || { echo "no carry set .devcarry/mjwarp/part1: nothing to stage"; exit 0; }
  exec bash .devcarry/mjwarp/part1/stage.sh
fi

carry mjwarp .devcarry/mjwarp/part2
carry base .devcarry/base
wants contract && wheels pytest pytest
wants train && wheels rsl_rl rsl_rl
wants train && menagerie
install_unienv
record_env
robots_found

for mode in "${MODES[@]}"; do
  case "$mode" in
    contract)
      default_k="mjwarp"
      [ "$REHEARSAL" = 1 ] && default_k="mjwarp and test_lifecycle"
      contract mjwarp tests/contract tests/backends/test_mjwarp.py -k "${CONTRACT_K:-$default_k}"
      ;;
    bench) bench mjwarp --backend mjwarp ;;
    train) train mjwarp ;;
  esac
done
finish
