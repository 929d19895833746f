#!/usr/bin/env bash
# Prepare, here, what a call on a GPU machine carries (RESULTS.md §5): `.whl`, the wheels the
# machine's image lacks (for its Python 3.12), and `.gpu`, the SB batches, test2016 and the
# Multi30k files and JoeyNMT's yaml. Both folders are ignored (`.git/info/exclude`). Then:
#   run(command="bash benchmarks/gpu_side_by_side.sh 2>&1 | tee $OUT/run.log", carry=[".gpu", ".whl"])
#   run(command="bash benchmarks/gpu_tests.sh 2>&1", carry=[".gpu", ".whl"])
# Usage: bash benchmarks/gpu_bundle.sh   (from the repository root, `make install` done,
# KERAS_RNMT_DATA pointing at ../shared/data or its like)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DATA=${KERAS_RNMT_DATA:-$(cd .. && pwd)/shared/data}
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl .gpu/data/multi30k .gpu/peer
# Versions: ours (keras, keras-hub) as installed here; JoeyNMT's as in the CPU runs
# (importlib_metadata 8.7.0: 10.x needs a package that image lacks).
version() { "$PY" -c "import importlib.metadata as m; print(m.version('$1'))"; }
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
  "keras==$(version keras)" "keras-hub==$(version keras-hub)" "namex==$(version namex)" \
  "optree==$(version optree)" joeynmt==2.3.0 subword-nmt==0.3.8 importlib_metadata==8.7.0
cp "$DATA"/multi30k/{train,val,test_2016_flickr}.lc.norm.tok.{en,de} .gpu/data/multi30k/
cp "$DATA"/../peer/joeynmt_sb.yaml .gpu/peer/
KERAS_BACKEND=jax KERAS_RNMT_DATA="$DATA" "$PY" benchmarks/gpu_check.py prepare \
  .gpu/sb_batches_460.npz --batches 460
du -sh .whl .gpu
