# xlapy: `make demo` and `make test` each create .venv when missing.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test corpus bench bench-peers bench-publish clean

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[test,demo]'
	$(BIN)/python -m pip install -q -e '.[mpi]' || echo "mpich/mpi4py could not be installed: tests/distributed will skip"
	$(BIN)/python -m pip install -q torch==2.13.0 || echo "torch could not be installed: tests/torch will skip"
	touch $@

# The newcomer's first ten minutes: an HLO module through `xlapy run`, then examples/digits_demo.py trains an
# MLP and a CNN on scikit-learn's digits with jit/grad and writes demo_out/ (plot, HLO, HTML graph).
demo: $(BIN)/.installed
	$(BIN)/xlapy run examples/seed_sum.hlo --inputs examples/seed_sum.npz
	$(BIN)/python examples/digits_demo.py --out demo_out

# Two worker processes (pytest-xdist, one per core on CI's 2-core machine), each test file on one worker so a
# file's module-scoped compiles happen once. Plain `pytest` (no -n) still runs everything in one process.
test: $(BIN)/.installed
	$(BIN)/python -m pytest -q -n auto --dist loadfile

# Benchmarks (never run by tests): numpy and xlapy side by side, and JAX / PyTorch where installed. They write
# benchmarks/out/ (ignored by git); `make bench-publish` copies the latest run over the tracked results.
bench: $(BIN)/.installed
	$(BIN)/python benchmarks/run.py

# The same in a separate environment that also has JAX and PyTorch (CPU build of torch 2.13.0).
bench-peers:
	test -x .venv-bench/bin/python || $(PY) -m venv .venv-bench
	.venv-bench/bin/python -m pip install -q -e '.[test]' matplotlib jax jaxlib torch==2.13.0
	.venv-bench/bin/python benchmarks/run.py

bench-publish:
	@test -f benchmarks/out/results.md || { echo "no benchmarks/out/results.md: run make bench or make bench-peers first"; exit 1; }
	cp benchmarks/out/results.md benchmarks/results.md
	test ! -f benchmarks/out/results.png || cp benchmarks/out/results.png benchmarks/results.png

# Regenerate the JAX/XLA correctness corpus (needs network access to PyPI for jax).
corpus:
	bash tools/setup_jax_env.sh
	.venv-jax/bin/python tools/gen_corpus.py

clean:
	rm -rf $(VENV) build *.egg-info

# The real-model suite (benchmarks/models, issue 11): compile and run time of xlapy against XLA:CPU, per module,
# in .venv-models (jax pinned to the corpus's version, xlapy editable). Options through BENCH_MODELS_ARGS, e.g.
# make bench-models BENCH_MODELS_ARGS="--only 'gpt2|lstm' --busy --timeout 300"
.PHONY: bench-models
bench-models:
	bash tools/setup_models_env.sh models
	.venv-models/bin/python benchmarks/run_models.py $(BENCH_MODELS_ARGS)
