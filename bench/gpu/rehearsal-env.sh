#!/usr/bin/env bash
# The CPU rehearsal's base environment: a Python 3.12 virtual environment holding only the
# packages the GPU machine has (bench/gpu/device-packages.txt, lines marked `# rehearsal`,
# at the machine's versions where known: torch 2.11.0, torchvision 0.26.0, transformers
# 5.17.0, huggingface-hub 1.33.0, numpy 2.5.2, ...), installed from the package registry.
# It stands for the machine's own image; bench/gpu/run.sh installs the prepared wheels
# over it into a new temporary folder on every run, as on the machine.
#
#   bench/gpu/rehearsal-env.sh            # build, or reuse when the requirements match
#   bench/gpu/rehearsal-env.sh --fresh    # rebuild from nothing
#
# Prints the environment's python on its last line. The folder (.gpu-rehearsal/, ignored
# by git) is about 6 GB: the registry's torch 2.11.0 is the CUDA build with its nvidia
# libraries (it runs on the CPU); the first build downloads about 3 GB.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
env_dir="${GPU_REHEARSAL_ENV:-$root/.gpu-rehearsal/venv}"
fresh=0
[[ "${1:-}" == "--fresh" ]] && fresh=1

find_python312() {
    if [[ -n "${PYTHON312:-}" ]]; then echo "$PYTHON312"; return; fi
    if python3.12 -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
        command -v python3.12; return
    fi
    local candidate
    for candidate in "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12 \
        /usr/bin/python3.12 /usr/local/bin/python3.12; do
        if [[ -x "$candidate" ]]; then echo "$candidate"; return; fi
    done
    echo "rehearsal-env: no Python 3.12 here (set PYTHON312=/path/to/python3.12)" >&2
    exit 2
}

python312="$(find_python312)"
requirements="$(mktemp)"
trap 'rm -f "$requirements"' EXIT
"$python312" "$here/wheels.py" rehearsal >"$requirements" 2>/dev/null \
    || python3 "$here/wheels.py" rehearsal >"$requirements"
stamp="$(cat "$requirements" "$python312" 2>/dev/null | sha256sum | cut -c1-16)"
if [[ $fresh == 0 && -x "$env_dir/bin/python" && "$(cat "$env_dir/.stamp" 2>/dev/null)" == "$stamp" ]]; then
    echo "rehearsal-env: reusing $env_dir" >&2
    echo "$env_dir/bin/python"
    exit 0
fi
echo "rehearsal-env: building $env_dir with $("$python312" --version) (minutes the first time)" >&2
rm -rf "$env_dir"
"$python312" -m venv "$env_dir"
"$env_dir/bin/python" -m pip install -q --upgrade pip >&2
"$env_dir/bin/python" -m pip install -q -r "$requirements" >&2
echo "$stamp" >"$env_dir/.stamp"
echo "$env_dir/bin/python"
