#!/bin/bash
# Every GPU check nitro has, in the order of their value, for a machine lent a GPU for minutes:
# the self-test, the GPU test files, then what datasets/ lacks: both GPU families under
# datasets/gpu_<id>, histogram and SpMV under datasets/<this CPU's id>.
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
  if ((limit < 15)); then echo "=== SKIP $name (${left}s left)" >&2; return 1; fi
  echo "=== +${SECONDS}s START $name (limit ${limit}s)" >&2
  timeout -k 5 "$limit" "$@"; local rc=$?
  echo "=== +${SECONDS}s END $name rc=$rc" >&2
}
nvidia-smi -L 2>/dev/null || echo "no nvidia-smi here"
parallel=$("$PYTHON" -c "import xdist, pytest_timeout" 2>/dev/null && echo "-n 4 --timeout 150")
stage selftest 150 "$PYTHON" -m nitro.cli selftest --gpu
# with pytest-xdist a test that aborts the process (a CUDA fault) fails alone: a new worker starts
stage gpu-tests 200 "$PYTHON" -m pytest -p no:cacheprovider $parallel -rs -v \
  tests/benchmarks/test_histogram_cuda.py tests/benchmarks/test_spmv_cuda.py tests/devices/test_gpu.py \
  tests/devices/test_gpu_microbench.py tests/devices/test_gpu_proxies.py tests/devices/test_ncu.py \
  tests/test_selftest.py tests/test_cuda.py tests/test_record.py > "$OUT/gpu_tests.log" 2>&1
grep -E "FAILED|ERROR|crashed|passed|failed" "$OUT/gpu_tests.log" | tail -30
# record what datasets/ lacks: this GPU's families and this machine's CPU (a lent machine's CPU
# is usually one nitro has no data of), each after a short quiet wait per input
gpu=$("$PYTHON" -c "from nitro.devices.gpu import cuda_device_id; print(cuda_device_id() or '')")
cpu=$("$PYTHON" -c "from nitro.devices import cpu_device_id; print(cpu_device_id())")
if [ -z "$gpu" ]; then
  "$PYTHON" -c "from nitro import cuda; print('no GPU to record:', cuda.variants_unavailable())"
elif [ -d "datasets/gpu_$gpu" ]; then echo "datasets/gpu_$gpu exists: not recorded again"
else stage record-gpu 300 "$PYTHON" -m nitro.cli record histogram_cuda,spmv_cuda "datasets/gpu_$gpu" \
  --wait-window 0.3 --wait-timeout 20
fi
if [ -d "datasets/$cpu" ]; then echo "datasets/$cpu exists: not recorded again"
else stage record-cpu 300 "$PYTHON" -m nitro.cli record histogram,spmv "datasets/$cpu" \
  --wait-window 0.3 --wait-timeout 20
fi
stage devices 60 "$PYTHON" -m nitro.cli devices --json > "$OUT/devices.json"
echo "=== done +${SECONDS}s"
