# Sourced (not run) by scripts/gpu-check and scripts/multi-gpu-check, from the repository root:
# the GPU machines have no registry access, so what they lack (nvmath-python,
# nvidia-cudnn-frontend, tinygrad, mpi4py and Open MPI) comes from a local wheel folder
# ($WHEELS, default .whl), installed under the prefix /tmp/pg-site and put on PYTHONPATH with
# this checkout. A prefix, not pip's --target: the Open MPI wheel ships mpirun in bin/ and
# libmpi in lib/ as data files, which --target drops; mpi4py loads libmpi by name, hence
# LD_LIBRARY_PATH. The MNIST files are $PARAGRAD_DATA, else a carried .data/, else
# ../shared/data. Logs go to $LOGS ($OUT or /tmp).
WHEELS=${WHEELS:-.whl}
LOGS=${OUT:-/tmp}
PREFIX=/tmp/pg-site
export PYTHONUNBUFFERED=1
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --prefix "$PREFIX" "$WHEELS"/*.whl || { echo "$(basename "$0"): wheel install failed"; exit 1; }
  SITE=$(python3 -c "import sys, sysconfig; print(sysconfig.get_path('purelib', vars={'base': sys.argv[1], 'platbase': sys.argv[1]}))" "$PREFIX")
  export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
  export PATH="$PREFIX/bin:$PATH"
  export LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
if [ -z "${PARAGRAD_DATA:-}" ]; then
  for d in .data ../shared/data; do [ -d "$d/mnist" ] && export PARAGRAD_DATA="$PWD/$d" && break; done
fi
# the `paragrad` command, which tests/test_readme.py runs as the README does: what `pip install
# -e .` would put on PATH (the machine has no install of this checkout), a script running it
if ! command -v paragrad >/dev/null; then
  mkdir -p "$PREFIX/bin"
  printf '#!/bin/sh\nexec python3 -m paragrad "$@"\n' > "$PREFIX/bin/paragrad" && chmod +x "$PREFIX/bin/paragrad"
  export PATH="$PREFIX/bin:$PATH"
fi
