#!/bin/bash
# MuJoCo Warp on the GPU machine: the conformance suite and the mjwarp tests on CUDA, then raw mujoco_warp
# (write ctrl, graph-launched steps, read qpos/qvel) vs unienv's backend and env step (python -m unienv.bench)
# on the cartpole and the ant at 4096 and 16384 envs.
#
# Prepare, once, on the machine that sends the runs (see ../shared/device/README.md; .devcarry/ is git-ignored):
#   ../shared/device/build-carry.sh mjwarp .devcarry/mjwarp     # part1 40 MiB + part2 36 MiB: two runs
#   ../shared/device/build-carry.sh base   .devcarry/base       # 8 MiB: gymnasium, hydra (unienv needs them)
#   pip download --no-deps --only-binary=:all: -d .devcarry/pytest pytest pluggy iniconfig   # if the remote lacks pytest
#
# Two calls back to back (the second within ~30 s, while the machine is warm; /tmp/mjw_stage must survive):
#   run 1  carry [".devcarry/mjwarp/part1"]                                       bash gpu/mjwarp_check.sh stage
#   run 2  carry [".devcarry/mjwarp/part2", ".devcarry/base", ".devcarry/pytest"]  bash gpu/mjwarp_check.sh all
# If run 2 says "warp.so.xz.part0 not found", the machine was fresh: make both runs again. Later calls on the
# warm machine need no carry: bash gpu/mjwarp_check.sh contract|bench. A fresh machine compiles mujoco_warp's
# kernels first (~45 s per model). CONTRACT_K narrows the tests (a pytest -k expression); TASKS, NUM_ENVS,
# BENCH_SECONDS, BENCH_ROUNDS change the bench. Results in $OUT: summary.txt, env.txt, contract_mjwarp.log
# (+ .xml), bench_mjwarp.log. Exits 1 if any step fails.
# CPU rehearsal (no carry sets, Warp's CPU device, tiny counts): UNIENV_GPU_REHEARSAL=1 bash gpu/mjwarp_check.sh all
source "$(dirname "$0")/lib.sh"
MODE="${1:-all}"
case "$MODE" in
  stage)
    [ "$REHEARSAL" = 1 ] && exit 0
    exec bash .devcarry/mjwarp/part1/stage.sh
    ;;
  contract | bench | all) ;;
  *) die "usage: bash gpu/mjwarp_check.sh [stage|contract|bench|all]" ;;
esac

carry mjwarp .devcarry/mjwarp/part2
carry base .devcarry/base
ensure_pytest
install_unienv
record_env

if [ "$MODE" != bench ]; then
  default_k="mjwarp"
  [ "$REHEARSAL" = 1 ] && default_k="mjwarp and test_lifecycle"
  step contract_mjwarp "$(share 300)" "${PYTEST[@]}" tests/contract tests/backends/test_mjwarp.py \
    -k "${CONTRACT_K:-$default_k}" --junitxml="$OUT/contract_mjwarp.xml"
fi
if [ "$MODE" != contract ]; then
  # shellcheck disable=SC2086
  step bench_mjwarp "$(share 240)" "${BENCH[@]}" --backend mjwarp --task $TASKS --num-envs $NUM_ENVS
fi
finish
