#!/usr/bin/env bash
# Create .venv-jax at the repo root with real JAX/XLA (jax, jaxlib) for
# generating / checking the correctness corpus. JAX is NEVER a runtime
# dependency of xlapy; this venv is only used by tools/gen_corpus.py and
# tools/xla_check.py.  Idempotent: does nothing if .venv-jax already works.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-jax"
PY="${PYTHON:-python3}"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import jax, jaxlib, numpy, ml_dtypes" 2>/dev/null; then
  echo ".venv-jax already exists: $("$VENV/bin/python" -c 'import jax; print("jax", jax.__version__)')"
  exit 0
fi
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet jax jaxlib numpy ml_dtypes
"$VENV/bin/python" -c 'import jax, jaxlib; print("installed jax", jax.__version__, "jaxlib", jaxlib.__version__)'
