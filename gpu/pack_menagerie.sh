#!/bin/bash
# Pack Menagerie robot folders for the GPU machine, which has none of the asset packages:
#   bash gpu/pack_menagerie.sh [ROBOT ...]     # default: unitree_go1 unitree_g1
# writes $MENAGERIE_CARRY/<robot>.tar.xz (default .devcarry/menagerie/, git-ignored) from the folder that
# unienv.robots finds here (UNIENV_MENAGERIE_DIR, the mujoco-menagerie cache or the `robots` extra's
# packages). Measured: unitree_go1 3.5 MB, unitree_g1 13.1 MB (xz -6). The train mode of gpu/*_check.sh
# unpacks them once per warm machine and points UNIENV_MENAGERIE_DIR there (gpu/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-python3}"
MENAGERIE_CARRY="${MENAGERIE_CARRY:-.devcarry/menagerie}"
[ $# -gt 0 ] || set -- unitree_go1 unitree_g1
mkdir -p "$MENAGERIE_CARRY"
for robot in "$@"; do
  folder="$("$PY" -c 'import sys; from unienv import robots; print(robots.model_dir(sys.argv[1]))' "$robot")"
  tar -C "$(dirname "$folder")" -cf - "$(basename "$folder")" | xz -T0 "${XZ_LEVEL:--6}" > "$MENAGERIE_CARRY/$robot.tar.xz"
  echo "$MENAGERIE_CARRY/$robot.tar.xz: $(du -h "$MENAGERIE_CARRY/$robot.tar.xz" | cut -f1) from $folder"
done
