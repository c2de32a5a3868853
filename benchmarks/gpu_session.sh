#!/usr/bin/env bash
# One device-machine session: install tilec, run the GPU tests, the conformance suite and the
# benchmarks; logs go to $OUT (the device tool brings them back).
#   bash benchmarks/gpu_session.sh [tests] [conformance] [bench] [bench-base] [matmul] [autotune] [launch]
#                                  [fuzz] [attention-variants] [sweep] [sweep-quick]
# fuzz: a device campaign of random kernels (nvidia against interp, issue 14); attention-variants:
# the attention forward timed with the PTX fixes of benchmarks/attention_static.py applied by ptxas
# wrappers (base, hoist-a, ex2-ftz, both), the baseline in the same call.
# bench-base runs the same benchmark on an older tree ($BASE_TREE, e.g. a `git archive` of the
# commit to compare with, carried to the device), so that both sides are timed in one session.
set -uo pipefail
OUT=${OUT:-/tmp/tilec-gpu-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . -e plugins/interp -e plugins/nvidia
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 -c "import triton, torch, llvmlite; print('triton', triton.__version__, 'torch', torch.__version__, 'llvmlite', llvmlite.__version__)"
parts=("${@:-tests conformance bench}")
for part in ${parts[*]}; do
    case $part in
    tests)
        timeout 420 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu tests/nvidia tests/lowering tests/compat \
            2>&1 | tee "$OUT/gpu_tests.log" | tail -25
        # torch interop (streams, graphs, torch.compile): not marked gpu, they skip without CUDA
        python3 -m pytest -q -p no:cacheprovider -rs tests/torch_ops tests/nvidia/test_nvidia_torch.py \
            2>&1 | tee "$OUT/torch_tests.log" | tail -8 ;;
    conformance)
        # The language tests on nvidia, each launch checked against the interpreter, in parallel.
        for shard in binary casts dot math memory reductions diagnostics; do
            TILEC_TEST_BACKEND=nvidia python3 -m pytest -q -p no:cacheprovider --tb=short \
                "tests/language/test_language_$shard.py" > "/tmp/conformance_$shard.log" 2>&1 &
        done
        wait
        cat /tmp/conformance_*.log > "$OUT/conformance.log"
        tail -n 2 /tmp/conformance_*.log
        # the Triton names of tests/compat (block pointers too), each launch on nvidia checked
        # against interp, and Triton's tutorials with CUDA torch tensors against torch
        TILEC_TEST_BACKEND=nvidia python3 -m pytest -q -p no:cacheprovider --tb=short tests/compat \
            -k "names or tutorials or descriptors or block_pointers or batched_dot" 2>&1 \
            | tee "$OUT/compat_names.log" | tail -3 ;;
    bench)
        python3 benchmarks/gpu_vs_triton.py --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" ;;
    matmul)
        for dtype in float16 bfloat16; do
            python3 benchmarks/matmul_vs_triton.py --quick --configs 3 --stages 3,4 --dtype $dtype \
                2>&1 | tee -a "$OUT/matmul.log" | tail -12
            python3 benchmarks/matmul_vs_triton.py --quick --configs 1 --size 8192 --dtype $dtype \
                2>&1 | tee -a "$OUT/matmul.log" | tail -3
        done
        # f32 inputs in tf32 (wgmma m64nNk8 on sm_90a)
        python3 benchmarks/matmul_vs_triton.py --quick --dtype float32 \
            2>&1 | tee -a "$OUT/matmul.log" | tail -7
        # sm_90 (not sm_90a): no wgmma, the mma.sync + ldmatrix path on the same H100
        python3 benchmarks/matmul_vs_triton.py --quick --configs 3 --target sm_90 \
            2>&1 | tee -a "$OUT/matmul.log" | tail -5 ;;
    autotune)
        python3 benchmarks/autotune_matmul.py --size 4096 --json "$OUT/autotune.json" 2>&1 |
            tee "$OUT/autotune.log" | tail -15 ;;
    launch)
        timeout 300 python3 benchmarks/launch_path.py --rounds 7 --count 20000 2>&1 |
            tee "$OUT/launch.log" | tail -20 ;;
    fuzz)
        timeout 240 python3 -m tilec fuzz --mode device --seed 400000 --time 150 --jobs 14 \
            --shrink-time 8 --timeout 60 --out "$OUT/fuzz" 2>&1 | tee "$OUT/fuzz.log" | tail -15 ;;
    attention-variants)
        wrappers=$(mktemp -d)
        python3 benchmarks/attention_static.py --ptxas-wrappers "$wrappers" > /dev/null
        for variant in base hoist-a ex2-ftz hoist-a+ex2-ftz; do
            ptxas_path=
            [[ $variant == base ]] || ptxas_path="$wrappers/ptxas-$variant"
            TILEC_PTXAS=$ptxas_path TILEC_CACHE_DIR=$(mktemp -d) python3 benchmarks/gpu_vs_triton.py \
                --quick --only flops --json "$OUT/attention_$variant.json" 2>&1 |
                tee "$OUT/attention_$variant.log" | tail -12
        done ;;
    sweep|sweep-quick)
        # issue 23's sweep: tilec against Triton, same source, each side's best config; the
        # markdown tables and the per-family summary end the log
        quick=; [[ $part == sweep-quick ]] && quick=--quick
        timeout 570 python3 benchmarks/sweep.py $quick --time-limit 500 --json "$OUT/$part.json" 2>&1 |
            tee "$OUT/$part.log" | tail -30 ;;
    bench-base)
        base=${BASE_TREE:?set BASE_TREE to the older tree to compare with}
        PYTHONPATH="$base/core:$base/plugins/interp:$base/plugins/nvidia" \
            python3 "$base/benchmarks/gpu_vs_triton.py" --json "$OUT/bench_base.json" 2>&1 |
            tee "$OUT/bench_base.log" ;;
    *)
        echo "gpu_session.sh: unknown part '$part' (parts: tests conformance bench bench-base matmul autotune launch fuzz attention-variants sweep sweep-quick)" >&2
        exit 2 ;;
    esac
done
