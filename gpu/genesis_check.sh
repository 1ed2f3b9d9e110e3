#!/bin/bash
# Genesis on the GPU machine: the conformance suite on CUDA, then raw Genesis vs unienv's backend and
# env step (python -m unienv.bench) on the cartpole and the ant at 4096 and 16384 envs.
#
# Prepare, once, on the machine that sends the run (see ../shared/device/README.md; .devcarry/ is git-ignored):
#   ../shared/device/build-carry.sh genesis .devcarry/genesis --lean        # 35 MiB: Genesis 1.4.5 + MuJoCo 4.0.0
#   ../shared/device/build-carry.sh base    .devcarry/base                  # 8 MiB: gymnasium, hydra (unienv needs them)
#   pip download --no-deps --only-binary=:all: -d .devcarry/pytest pytest pluggy iniconfig   # if the remote lacks pytest
#
# One call per mode (each at most 600 s; a fresh machine compiles Genesis's kernels first, ~100 s per distinct
# set of rigid options, so contract and bench are two calls; while the machine is warm the sets stay installed
# in /tmp/site and the kernel cache is reused):
#   carry: [".devcarry/genesis", ".devcarry/base", ".devcarry/pytest"]
#   bash gpu/genesis_check.sh contract      # tests/contract -k genesis on CUDA
#   bash gpu/genesis_check.sh bench         # the bench; TASKS="cartpole ant" NUM_ENVS="4096 16384" by default
#   bash gpu/genesis_check.sh all           # both, contract first
# CONTRACT_K narrows the suite (a pytest -k expression, e.g. "genesis and not dr_"); TASKS, NUM_ENVS,
# BENCH_SECONDS, BENCH_ROUNDS change the bench. Results in $OUT: summary.txt, env.txt, contract_genesis.log
# (+ .xml), bench_genesis.log. Exits 1 if any step fails.
# CPU rehearsal (no carry sets, device cpu, tiny counts): UNIENV_GPU_REHEARSAL=1 bash gpu/genesis_check.sh all
source "$(dirname "$0")/lib.sh"
MODE="${1:-all}"
case "$MODE" in
  contract | bench | all) ;;
  *) die "usage: bash gpu/genesis_check.sh [contract|bench|all]" ;;
esac

carry genesis .devcarry/genesis
carry base .devcarry/base
ensure_pytest
install_unienv
record_env

if [ "$MODE" != bench ]; then
  default_k="genesis"
  [ "$REHEARSAL" = 1 ] && default_k="genesis and test_lifecycle"
  step contract_genesis "$(share 300)" "${PYTEST[@]}" tests/contract -k "${CONTRACT_K:-$default_k}" \
    --junitxml="$OUT/contract_genesis.xml"
fi
if [ "$MODE" != contract ]; then
  # the ant's portable observation: Genesis has no MuJoCo cfrc_ext (the mj_fields capability)
  ant=()
  [[ " $TASKS " == *" ant "* || "$TASKS" == all ]] && ant=(--task-option include_cfrc_ext_in_observation=false)
  # shellcheck disable=SC2086
  step bench_genesis "$(share 240)" "${BENCH[@]}" --backend genesis --task $TASKS --num-envs $NUM_ENVS "${ant[@]}"
fi
finish
