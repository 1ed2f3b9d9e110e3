#!/bin/bash
# rsl_rl PPO at 4096 envs on the GPU machine: train.py on the Ant (or the quadruped), then the return curve's
# start and end and the steps/s, from rsl_rl's per-iteration report.
#
# Prepare, once, on the machine that sends the run (sets stay out of git, see shared/device/README.md):
#   ../shared/device/build-carry.sh genesis .devcarry/genesis --lean        # 35 MiB (or the two mjwarp parts)
#   ../shared/device/build-carry.sh base    .devcarry/base                  # 8 MiB: gymnasium, hydra, mujoco
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 -d .devcarry/rsl_rl \
#     rsl-rl-lib==5.5.1 tensordict==0.15.3 pyvers==0.2.3 GitPython gitdb smmap \
#     tensorboard tensorboard-data-server protobuf                           # ~8 MiB: rsl_rl and its imports
#   (the machine has torch 2.11, numpy, absl-py, pillow, cloudpickle; tensordict 0.15 needs torch >= 2.11)
#
# One call (Genesis compiles its kernels on a fresh machine first, ~100 s):
#   carry: [".devcarry/genesis", ".devcarry/base", ".devcarry/rsl_rl"]
#   command: bash gpu/train_ant.sh                         # TASK=ant BACKEND=genesis TRAIN_ENVS=4096 ITERATIONS=300
#            TASK=quadruped bash gpu/train_ant.sh           # the quadruped (tasks/quadruped.py) instead
#            BACKEND=mjwarp bash gpu/train_ant.sh           # after `bash gpu/mjwarp_check.sh stage` (two runs)
# Extra arguments go to train.py as Hydra overrides, e.g. `bash gpu/train_ant.sh num_envs=8192`.
# Results in $OUT: train.log (rsl_rl's report), curve.txt (return per iteration), summary.txt, policy.pt2, env.txt.
# Exits non-zero if training or its summary fails.
# CPU rehearsal (no carry sets, device cpu, 8 envs, 2 iterations): UNIENV_GPU_REHEARSAL=1 bash gpu/train_ant.sh
# (BACKEND=mujoco rehearses it without compiling an engine's kernels)
source "$(dirname "$0")/lib.sh"
TASK="${TASK:-ant}"
BACKEND="${BACKEND:-genesis}"
if [ "$REHEARSAL" = 1 ]; then defaults=(8 2); else defaults=(4096 300); fi
TRAIN_ENVS="${TRAIN_ENVS:-${defaults[0]}}"
ITERATIONS="${ITERATIONS:-${defaults[1]}}"

case "$BACKEND" in
  genesis) carry genesis .devcarry/genesis ;;
  mjwarp) carry mjwarp .devcarry/mjwarp/part2 ;;
  *) [ "$REHEARSAL" = 1 ] || die "BACKEND: expected genesis or mjwarp on the GPU machine, got $BACKEND" ;;
esac
carry base .devcarry/base
if ! "$PY" -c "import rsl_rl" 2> /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --target /tmp/site/rsl_rl .devcarry/rsl_rl/*.whl \
    || die "rsl_rl carry set failed to install"
  export PYTHONPATH="/tmp/site/rsl_rl${PYTHONPATH:+:$PYTHONPATH}"
fi
install_unienv
record_env

# -P: train.py imports unienv from $UNIENV_SITE (installed, with unienv.tasks), not from the checkout next to it
step train "${TRAIN_LIMIT:-540}" "$PY" -P train.py "train=ppo_$TASK" "backend=$BACKEND" "device=$DEVICE" \
  "num_envs=$TRAIN_ENVS" "train.iterations=$ITERATIONS" "train.policy_path=$OUT/policy.pt2" \
  "hydra.run.dir=$OUT/run" "$@"
sed -i 's/\x1b\[[0-9;]*m//g' "$OUT/train.log"

"$PY" - "$OUT" << 'EOF' | tee -a "$OUT/summary.txt"
import re, statistics, sys
out = sys.argv[1]
log = open(f"{out}/train.log").read()
returns = [float(x) for x in re.findall(r"Mean reward:\s+(-?[\d.]+)", log)]
lengths = [float(x) for x in re.findall(r"Mean episode length:\s+(-?[\d.]+)", log)]
fps = [int(x) for x in re.findall(r"Steps per second:\s+(\d+)", log)]
with open(f"{out}/curve.txt", "w") as f:
    f.writelines(f"{i} {r:.3f} {l:.1f}\n" for i, (r, l) in enumerate(zip(returns, lengths)))
if not returns:
    print("no iterations logged; see train.log:\n" + log[-3000:])
    sys.exit(1)
k = max(1, min(5, len(returns) // 10))
print(f"iterations logged: {len(returns)}")
print(f"return (mean of the last 100 episodes), first {k} iterations: {[round(r, 1) for r in returns[:k]]}")
print(f"return, last {k} iterations: {[round(r, 1) for r in returns[-k:]]}  (best {max(returns):.1f})")
print(f"episode length: {lengths[0]:.0f} -> {lengths[-1]:.0f}")
print(f"steps/s (collection + learning) per iteration: median {statistics.median(fps)}, last {fps[-1]}")
for line in re.findall(r"^(?:trained|eval:|policy:).*$", log, re.M):
    print(line)
EOF
[ "${PIPESTATUS[0]}" = 0 ] || FAILED+=(summary)
finish
