#!/usr/bin/env bash
# Create the two environments that lower the real-model suite (benchmarks/models/) to HLO:
#   .venv-models  jax + jaxlib (pinned to the corpus's XLA), flax, equinox, optax   -> tools/gen_models.py
#                 and torch (CPU), for benchmarks/run_models.py --torch (the modules' PyTorch twins)
#   .venv-tf      tensorflow-cpu (Keras 3 on the TF backend)                       -> tools/gen_tf_models.py
# Two venvs because TF and JAX pin different numpy / ml_dtypes. Neither is ever a runtime dependency of
# xlapy. .venv-models also gets xlapy (editable) so benchmarks/run_models.py can time both compilers in one
# process. Idempotent: an environment that already imports its packages is left alone.
#   bash tools/setup_models_env.sh          # both
#   bash tools/setup_models_env.sh models   # only .venv-models (what `make bench-models` needs)
#   bash tools/setup_models_env.sh tf       # only .venv-tf
set -euo pipefail
WHICH="${1:-all}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
JAX_VERSION="${JAX_VERSION:-0.10.2}"
TF_VERSION="${TF_VERSION:-2.21.0}"

make_venv() {  # make_venv DIR CHECK_IMPORTS PIP_ARGS...
  local venv="$1" check="$2"
  shift 2
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then
    echo "$(basename "$venv") already exists"
    return 0
  fi
  "$PY" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "$@"
}

if [ "$WHICH" = all ] || [ "$WHICH" = models ]; then
  make_venv "$ROOT/.venv-models" "import jax, jaxlib, flax, equinox, optax, xlapy" \
    "jax==$JAX_VERSION" "jaxlib==$JAX_VERSION" flax equinox optax ml_dtypes pytest -e "$ROOT"
  "$ROOT/.venv-models/bin/python" -c 'import torch' 2>/dev/null || \
    "$ROOT/.venv-models/bin/python" -m pip install --quiet "torch==${TORCH_VERSION:-2.13.0}" || \
    echo "torch could not be installed: run_models.py --torch will say so"
  "$ROOT/.venv-models/bin/python" -c 'import jax, flax, equinox, optax
print("models: jax", jax.__version__, "flax", flax.__version__, "equinox", equinox.__version__, "optax", optax.__version__)'
fi
if [ "$WHICH" = all ] || [ "$WHICH" = tf ]; then
  make_venv "$ROOT/.venv-tf" "import tensorflow, keras" "tensorflow-cpu==$TF_VERSION"
  TF_CPP_MIN_LOG_LEVEL=2 "$ROOT/.venv-tf/bin/python" -c 'import tensorflow as tf, keras
print("tf: tensorflow", tf.__version__, "keras", keras.__version__)' 2>/dev/null
fi
