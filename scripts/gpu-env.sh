# Sourced (not run) by scripts/gpu-check and scripts/multi-gpu-check, from the repository root:
# the GPU machines have no registry access, so what they lack (nvmath-python,
# nvidia-cudnn-frontend, tinygrad) comes from a local wheel folder ($WHEELS, default .whl),
# installed into /tmp/pg-site and put on PYTHONPATH with this checkout; the MNIST files are
# $PARAGRAD_DATA, else a carried .data/, else ../shared/data. Logs go to $LOGS ($OUT or /tmp).
WHEELS=${WHEELS:-.whl}
LOGS=${OUT:-/tmp}
export PYTHONUNBUFFERED=1
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/pg-site "$WHEELS"/*.whl || { echo "$(basename "$0"): wheel install failed"; exit 1; }
  export PYTHONPATH="/tmp/pg-site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
if [ -z "${PARAGRAD_DATA:-}" ]; then
  for d in .data ../shared/data; do [ -d "$d/mnist" ] && export PARAGRAD_DATA="$PWD/$d" && break; done
fi
