#!/usr/bin/env bash
# Prepare the GPU benchmark run (issue 48) on a machine that reaches the package registry:
# download the wheels the GPU machine lacks (bench/gpu/wheels.txt) for CPython 3.12 /
# manylinux x86-64 into .gpu-wheels/ (ignored by git), check them (one version each, every
# requirement met by a carried wheel or by the machine's own packages, the whole under the
# 64 MiB a device call carries with the working tree), and print what to carry.
#
#   bench/gpu/prepare.sh              # download what is missing, check, print the carry list
#   bench/gpu/prepare.sh --check      # no download: check .gpu-wheels/ as it is
#
# No model travels: every model of the run is built on the machine from its config with
# random weights (OpenCLIP ViT-B-32 in bench/embed.py and bench/eval.py, the tiny editor
# pipelines of contrastkit.tiny.editor in bench/edit.py, the tiny test models of
# tests/tiny_models.py), nothing is read from a hub; the CPU rehearsal (bench/gpu/run.sh
# --device cpu --smoke) runs them with the hub switched off (HF_HUB_OFFLINE=1).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
wheels="${GPU_WHEELS:-$root/.gpu-wheels}"
python="${PYTHON:-python3}"
limit=$((64 * 1024 * 1024))

download=1
[[ "${1:-}" == "--check" ]] && download=0

if [[ $download == 1 ]]; then
    mkdir -p "$wheels"
    pins="$(mktemp)"
    trap 'rm -f "$pins"' EXIT
    "$python" "$here/wheels.py" pins >"$pins"
    # shellcheck disable=SC2046  # the target options are words
    "$python" -m pip download -q $("$python" "$here/wheels.py" pip-args) -d "$wheels" -r "$pins"
    # drop wheels of versions no longer pinned (a second version stops the install)
    "$python" "$here/wheels.py" prune "$wheels"
    # record what was downloaded (file, sha256, size, requirements): tests/test_gpu_run.py
    # checks the pins offline against it; commit it with wheels.txt
    "$python" "$here/wheels.py" lock "$wheels"
fi

echo "== wheels"
"$python" "$here/wheels.py" check "$wheels"

echo "== what one device call carries"
tree=$(cd "$root" && { git ls-files -z; git ls-files -z --others --exclude-standard; } \
    | xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
carried=$(du -sb "$wheels" | cut -f1)
total=$((tree + carried))
awk -v t="$tree" -v c="$carried" 'BEGIN {
    printf "working tree %.1f MiB + .gpu-wheels %.1f MiB = %.1f MiB (limit 64 MiB)\n",
        t / 1048576, c / 1048576, (t + c) / 1048576 }'
if ((total > limit)); then
    echo "prepare: over the 64 MiB a call carries: split the wheels into two calls" >&2
    exit 1
fi

echo "== models"
echo "none travel: each is built on the machine from its config, with random weights"

carry=$("$python" "$here/wheels.py" carry "$wheels")
cat <<EOF
== ready
Rehearse on the CPU first (a Python 3.12 env of the machine's packages + these wheels):
    bench/gpu/run.sh --device cpu --smoke
Then, on a GPU machine, call the device tool's run with
    carry:     $carry
    timeout_s: 540
    command:   bash bench/gpu/run.sh --device cuda
(the run ends within 8 minutes; its log and summary come back from \$OUT).
EOF
