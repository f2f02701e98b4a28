"""Registers the `models` marker of tests/models (the real-model suite of benchmarks/models): select or
deselect it with `-m models` / `-m "not models"`."""


def pytest_configure(config):
    config.addinivalue_line("markers", "models: a real-model module of benchmarks/models run on the CPU backend "
                                       "against XLA's recorded outputs (size-gated, see test_models.py)")
