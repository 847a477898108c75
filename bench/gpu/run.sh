#!/usr/bin/env bash
# The GPU benchmark run (issue 48): install the prepared wheels (bench/gpu/prepare.sh) with
# --no-deps into a temporary folder, install contrastkit there without dependencies, print
# the GPU and its driver, and run each benchmark step under its own timeout, the whole
# within --budget seconds (8 minutes on CUDA). A step that fails or times out is recorded
# and the next one runs; a summary ends the run. Everything goes to $OUT (or --out):
# run.log (all output) and summary.md (each step's result and its figure lines): two files,
# within what the device tool brings back (8 files).
#
#   bash bench/gpu/run.sh --device cuda                # on the GPU machine (the default)
#   bash bench/gpu/run.sh --device cpu --smoke         # the rehearsal here, tiny sizes
#   bash bench/gpu/run.sh --list --device cuda         # the steps, one a line; run nothing
#
# Options: --device cuda|cpu, --smoke (tiny sizes), --out DIR (default $OUT, else
# .gpu-rehearsal/out-DEVICE), --python PY (default: python3 on CUDA; on the CPU the
# rehearsal's Python 3.12 env of the GPU machine's packages, bench/gpu/rehearsal-env.sh),
# --wheels DIR (default .gpu-wheels), --budget SECONDS (default 480 on CUDA, 1800 smoke).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
device=cuda smoke=0 list=0 out="${OUT:-}" python="" wheels="$root/.gpu-wheels" budget=""

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while (($#)); do
    case "$1" in
        --device) device="${2:?--device needs cuda or cpu}"; shift 2 ;;
        --smoke) smoke=1; shift ;;
        --out) out="${2:?--out needs a folder}"; shift 2 ;;
        --python) python="${2:?--python needs an interpreter}"; shift 2 ;;
        --wheels) wheels="${2:?--wheels needs a folder}"; shift 2 ;;
        --budget) budget="${2:?--budget needs seconds}"; shift 2 ;;
        --list) list=1; shift ;;
        -h | --help) usage 0 ;;
        *) echo "run.sh: unknown option '$1'" >&2; usage 2 ;;
    esac
done
case "$device" in cuda | cpu) ;; *) echo "run.sh: --device must be cuda or cpu, not '$device'" >&2; exit 2 ;; esac

# The CUDA-only tests: those skipped without CUDA (skipif on torch.cuda.is_available()).
CUDA_TESTS=(
    "tests/evaluators/test_pipeline.py::test_gpu_decoding_matches_the_reference_on_cuda"
    "tests/evaluators/test_contrast.py::test_blocked_scoring_equals_the_dense_evaluation_with_ties"
    "tests/evaluators/test_contrast.py::test_scores_do_not_depend_on_block_device_or_tf32"
)

# A bench script's smallest run: its --smoke where it has one, else the flags given.
tiny() {
    local script="$1"
    shift
    if grep -q -- '"--smoke"' "$root/$script"; then echo "--smoke"; else echo "$*"; fi
}

# The steps: NAME|TIMEOUT_S|ARGUMENTS OF PYTHON (no spaces inside an argument). The first
# checks the carried wheels' requirements against what this Python imports.
steps=("deps|20|bench/gpu/wheels.py verify $wheels")
if [[ $smoke == 1 ]]; then
    [[ -z $budget ]] && budget=1800
    steps+=(
        "embed-tensor|300|bench/embed.py --device $device --decode tensor --images 32 --batch-size 16"
        "embed-worker|300|bench/embed.py --device $device --decode worker --images 32 --batch-size 16"
        "eval|400|bench/eval.py --device $device --skip-official $(tiny bench/eval.py --quick --copies 1 --batch-size 16)"
    )
    if [[ $device == cuda ]]; then
        steps+=("knn|120|bench/knn.py --device cuda --sizes 20000 --repeats 1 --check 200")
    else  # the CUDA search needs CUDA: the CPU comparison (FAISS against NumPy) stands in
        steps+=("knn|120|bench/knn.py --device cpu --sizes 2000 --max-queries 100")
    fi
    steps+=(
        "edit-256|400|bench/edit.py --families --device $device --resolutions 32 --edits 2 --batch 2 --steps 2"
        "edit-512|400|bench/edit.py --families --device $device --resolutions 64 --edits 2 --batch 2 --steps 2"
    )
else
    [[ -z $budget ]] && budget=$([[ $device == cuda ]] && echo 480 || echo 3600)
    steps+=(
        # fewer images and copies than the scripts' GPU defaults (20,000; 20): writing the
        # JPEGs alone takes about 2 ms each on one core, and the run has 8 minutes
        "embed-tensor|65|bench/embed.py --device $device --decode tensor --images 8000"
        "embed-worker|65|bench/embed.py --device $device --decode worker --images 8000"
        "eval|85|bench/eval.py --device $device --skip-official --copies 10"
    )
    if [[ $device == cuda ]]; then
        steps+=("knn|60|bench/knn.py --device cuda --sizes 196197")
    else
        steps+=("knn|600|bench/knn.py --device cpu --quick")
    fi
    steps+=(
        "edit-256|45|bench/edit.py --families --device $device --resolutions 256"
        "edit-512|45|bench/edit.py --families --device $device --resolutions 512"
    )
fi
steps+=("cuda-tests|$([[ $smoke == 1 ]] && echo 300 || echo 55)|-m pytest -q -n 0 -rs -p no:cacheprovider -k cuda ${CUDA_TESTS[*]}")

if [[ $list == 1 ]]; then
    printf '%s\n' "${steps[@]}"
    exit 0
fi

# --- where things go -------------------------------------------------------------------
[[ -z $out ]] && out="$root/.gpu-rehearsal/out-$device"
mkdir -p "$out"
rm -f "$out/run.log" "$out/summary.md"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpu-run.XXXXXX")"
mkdir -p "$work/logs"
exec > >(tee -a "$out/run.log") 2>&1
tee_pid=$!
finish() {  # let tee write the last lines before the run ends
    local rc=$1
    rm -rf "$work"
    exec 1>&- 2>&-
    wait "$tee_pid" 2>/dev/null
    exit "$rc"
}
start=$SECONDS
echo "== bench/gpu/run.sh --device $device$([[ $smoke == 1 ]] && echo ' --smoke'), budget ${budget} s, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown), out $out"

if ! compgen -G "$wheels/*.whl" >/dev/null && [[ $device == cpu ]]; then
    echo "== no wheels in $wheels: preparing them (bench/gpu/prepare.sh)"
    GPU_WHEELS="$wheels" bash "$here/prepare.sh" || finish 2
fi
if ! compgen -G "$wheels/*.whl" >/dev/null; then
    echo "run.sh: no wheels in $wheels: run bench/gpu/prepare.sh first (where the registry is reachable)"
    finish 2
fi
if [[ -z $python ]]; then
    if [[ $device == cuda ]]; then
        python=python3
    else
        python="$(bash "$here/rehearsal-env.sh")" || { echo "run.sh: no rehearsal env"; finish 2; }
    fi
fi

# --- install: the wheels and the project, without dependencies, into a temporary folder ---
site="$work/site"
echo "== install into $site with $("$python" --version 2>&1) ($(command -v "$python" || echo "$python"))"
if ! "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --disable-pip-version-check --target "$site" "$wheels"/*.whl; then
    echo "run.sh: the wheels did not install: nothing can run"
    finish 1
fi
mkdir -p "$work/project"
cp -r "$root/pyproject.toml" "$root/README.md" "$root/src" "$work/project/"
project="installed (pip --no-deps)"
if ! "$python" -m pip install -q --no-index --no-deps --no-build-isolation --no-compile \
    --no-cache-dir --disable-pip-version-check --upgrade --target "$site" "$work/project"; then
    project="from the source tree (PYTHONPATH; building it failed: see above)"
    export PYTHONPATH="$root/src"
fi
echo "project: $project"
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONNOUSERSITE=1 PYTHONUNBUFFERED=1 MPLBACKEND=Agg TQDM_DISABLE=1
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HOME="$work/hf"
export HF_HUB_DISABLE_PROGRESS_BARS=1 TOKENIZERS_PARALLELISM=false
echo "install: $((SECONDS - start)) s"

# --- the machine ---------------------------------------------------------------------------
echo "== machine"
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    nvidia-smi | head -n 4 | tail -n 2
else
    echo "nvidia-smi: not on this machine"
fi
machine="$("$python" - <<'EOF' 2>&1
import importlib.metadata as md, platform, torch
names = ["open_clip_torch", "diffusers", "datasets", "faiss-cpu", "facenet-pytorch", "ImageHash",
         "ftfy", "pycocotools", "transformers", "huggingface-hub", "numpy", "contrastkit"]
gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA device"
print(f"{platform.machine()}, Python {platform.python_version()}, torch {torch.__version__} "
      f"(CUDA {torch.version.cuda}), GPU: {gpu}")
print(", ".join(f"{n} {md.version(n)}" for n in names))
EOF
)"
echo "$machine"

# --- the steps -----------------------------------------------------------------------------
results=()
failed=0
for step in "${steps[@]}"; do
    IFS='|' read -r name limit command <<<"$step"
    left=$((budget - (SECONDS - start) - 10))
    ((limit > left)) && limit=$left
    log="$work/logs/$name.log"
    if ((limit < 10)); then
        echo "== $name: not run, the budget is spent"
        results+=("$name|not run (budget spent)|0|0")
        failed=$((failed + 1))
        continue
    fi
    echo "== $name (timeout ${limit} s): $python $command"
    began=$SECONDS
    set -f  # the arguments hold no patterns
    # shellcheck disable=SC2086  # ARGUMENTS are words
    (cd "$root" && timeout -k 10 "$limit" "$python" $command) 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    set +f
    took=$((SECONDS - began))
    case $rc in
        0) status=ok ;;
        124 | 137) status="TIMED OUT"; failed=$((failed + 1)) ;;
        *) status="FAILED (exit $rc)"; failed=$((failed + 1)) ;;
    esac
    echo "== $name: $status in $took s"
    results+=("$name|$status|$took|$limit")
done

# --- the summary ---------------------------------------------------------------------------
{
    echo "# GPU benchmark run: --device $device$([[ $smoke == 1 ]] && echo ' --smoke')"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown); project $project"
    echo
    echo '```'
    echo "$machine"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    echo '```'
    echo
    echo "| step | result | seconds | timeout s |"
    echo "|---|---|---:|---:|"
    for row in "${results[@]}"; do echo "| ${row//|/ | } |"; done
    echo
    echo "steps: $((${#results[@]} - failed)) ok, $failed not ok; whole run $((SECONDS - start)) s of ${budget} s"
    for row in "${results[@]}"; do
        name="${row%%|*}"
        [[ -f "$work/logs/$name.log" ]] || continue
        echo
        echo "## $name"
        echo
        echo '```'
        grep -E 'target|share|images/s|TFLOP|edit-steps|^\||^ *[0-9,]+ +[0-9,]+ |^ +N +|passed|failed|skipped|Error|error:' \
            "$work/logs/$name.log" | grep -v -E 'Loading|Writing' | tail -n 40
        echo '```'
    done
} >"$out/summary.md"
echo
cat "$out/summary.md"
finish $((failed > 0))
