# xlapy: `make demo` and `make test` each create .venv when missing.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test corpus clean

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/xlapy run examples/seed_sum.hlo --inputs examples/seed_sum.npz

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q

# Regenerate the JAX/XLA correctness corpus (needs network access to PyPI for jax).
corpus:
	bash tools/setup_jax_env.sh
	.venv-jax/bin/python tools/gen_corpus.py

clean:
	rm -rf $(VENV) build *.egg-info
