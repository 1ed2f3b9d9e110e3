#!/bin/bash
# Genesis on the GPU machine, one mode or several per device call, in the order given:
#   contract  the conformance suite on CUDA (tests/contract -k genesis)
#   bench     raw Genesis vs unienv's backend and env step (python -m unienv.bench): TASKS="cartpole ant"
#             at NUM_ENVS="4096 16384 65536" (Genesis runs no CUDA graph: the bench says it does not apply)
#   train     train.py, rsl_rl PPO on TRAIN_TASK=quadruped, TRAIN_ENVS=4096 envs, for TRAIN_SECONDS=150 s
#             (the fallback if training on mjwarp fails)
#   all       contract bench train (the rehearsal; on the card more than one call holds, see README)
#
# Prepare, once, on the machine that sends the run (see ../shared/device/README.md; .devcarry/ is git-ignored):
#   ../shared/device/build-carry.sh genesis .devcarry/genesis --lean        # 35 MiB: Genesis 1.4.5 + MuJoCo 4.0.0
#   ../shared/device/build-carry.sh base    .devcarry/base                  # 8 MiB: gymnasium, hydra (unienv needs them)
#   .devcarry/rsl_rl for train: see gpu/mjwarp_check.sh
#
# The calls on a machine without network access (gpu/README.md describes the scripts): a fresh machine compiles Genesis's
# kernels first (~100 s per distinct set of rigid options), later processes on the warm machine reuse them.
#   carry [".devcarry/genesis", ".devcarry/base"]   bash gpu/genesis_check.sh bench
#   (warm, no carry)                                bash gpu/genesis_check.sh contract
# CONTRACT_K narrows the suite (a pytest -k expression, e.g. "genesis and not dr_"); TASKS, NUM_ENVS,
# BENCH_SECONDS, BENCH_ROUNDS, TRAIN_* and the *_LIMIT step timeouts are in gpu/lib.sh. Results in $OUT:
# summary.txt, and per step <step>_genesis.log and .json (train also policy_genesis.safetensors). Exits 1 if any
# step fails.
# CPU rehearsal (no carry sets, device cpu, tiny counts): UNIENV_GPU_REHEARSAL=1 bash gpu/genesis_check.sh all
: "${BENCH_LIMIT:=330}" # three scene builds per row, each a few seconds at 65536 envs
source "$(dirname "$0")/lib.sh"
modes "contract bench train" "$@"

carry genesis .devcarry/genesis
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
      default_k="genesis"
      [ "$REHEARSAL" = 1 ] && default_k="genesis and test_lifecycle"
      contract genesis tests/contract -k "${CONTRACT_K:-$default_k}"
      ;;
    bench)
      # the ant's portable observation: Genesis has no MuJoCo cfrc_ext (the mj_fields capability)
      ant=()
      [[ " $TASKS " == *" ant "* || "$TASKS" == all ]] && ant=(--task-option include_cfrc_ext_in_observation=false)
      bench genesis --backend genesis "${ant[@]}"
      ;;
    train) train genesis ;;
  esac
done
finish
