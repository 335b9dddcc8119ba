#!/bin/bash
# Every GPU check nitro has, in the order of their value, for a machine lent a GPU for minutes:
# the self-test, the GPU test files, then both GPU families recorded under datasets/gpu_<id>.
# Needs nitro installed with its gpu extra (pycuda, nvidia-ml-py) and `python` the interpreter
# that has it (PYTHON=...). Results go to OUT (default ./gpu_check_out); each stage is cut at its
# own limit and at DEADLINE seconds in all, so that what ran comes back even when time is short.
set -u
PYTHON=${PYTHON:-python3}
OUT=${OUT:-gpu_check_out}
DEADLINE=${DEADLINE:-450}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export NITRO_NCU=${NITRO_NCU:-$(command -v ncu || true)}
stage() {  # stage NAME LIMIT CMD...: run CMD for at most min(LIMIT, time left) seconds
  local name=$1 limit=$2 left=$((DEADLINE - SECONDS)); shift 2
  ((left < limit)) && limit=$left
  if ((limit < 15)); then echo "=== SKIP $name (${left}s left)"; return 1; fi
  echo "=== +${SECONDS}s START $name (limit ${limit}s)"
  timeout -k 5 "$limit" "$@"; local rc=$?
  echo "=== +${SECONDS}s END $name rc=$rc"
}
nvidia-smi -L || echo "no nvidia-smi here"
parallel=$("$PYTHON" -c "import xdist, pytest_timeout" 2>/dev/null && echo "-n 4 --timeout 150")
stage selftest 170 "$PYTHON" -m nitro.cli selftest --gpu
# with pytest-xdist a test that aborts the process (a CUDA fault) fails alone: a new worker starts
stage gpu-tests 200 "$PYTHON" -m pytest -p no:cacheprovider $parallel -rs -v \
  tests/benchmarks/test_histogram_cuda.py tests/benchmarks/test_spmv_cuda.py tests/devices/test_gpu.py \
  tests/devices/test_gpu_microbench.py tests/devices/test_gpu_proxies.py tests/devices/test_ncu.py \
  tests/test_selftest.py tests/test_cuda.py tests/test_record.py > "$OUT/gpu_tests.log" 2>&1
grep -E "FAILED|ERROR|crashed|passed|failed" "$OUT/gpu_tests.log" | tail -30
id=$("$PYTHON" -c "from nitro import cuda; print(cuda.device_id() or '')")
[ -n "$id" ] || { "$PYTHON" -c "from nitro import cuda; print('nothing to record:', cuda.variants_unavailable())"; exit 0; }
stage record 300 "$PYTHON" -m nitro.cli record histogram_cuda,spmv_cuda "datasets/gpu_$id" \
  --wait-window 0.3 --wait-timeout 20
stage devices 60 "$PYTHON" -m nitro.cli devices --json > "$OUT/devices.json"
echo "=== done +${SECONDS}s"
