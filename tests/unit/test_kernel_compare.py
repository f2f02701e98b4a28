"""benchmarks/kernel_compare.py's bookkeeping (the tool itself needs jax: .venv-models)."""
from xlapy.testing import load_file

kc = load_file("benchmarks/kernel_compare.py", "kernel_compare")


def test_classes_of_both_sides():
    assert kc.op_class("xla", "ynn_fusion.214") == "dot"
    assert kc.op_class("xla", "dot.144") == "dot"
    assert kc.op_class("xla", "multiply_add_fusion.11") == "loop"
    assert kc.op_class("xla", "while.24") == "container"
    assert kc.op_class("xlapy", "dot_general.9", "dot") == "dot"
    assert kc.op_class("xlapy", "tanh_multiply_fusion", "loop fusion") == "loop"
    assert kc.op_class("xlapy", "while.66", "while") == "container"


def test_per_call_is_the_lower_quartile_times_events_per_call():
    # 2 calls; a loop-body op ran 4 times per call: its lower quartile (2.0 of 8 sorted values) x 4
    samples = {"body": [9.0, 1.0, 2.0, 2.0, 3.0, 2.0, 2.0, 2.0], "top": [5.0, 7.0]}
    got = kc.per_call(samples, calls=2)
    assert got == {"body": 8.0, "top": 5.0}


def test_totals_leave_containers_out():
    times = {"while.1": 10.0, "dot.2": 1.0, "fusion.3": 2.0}
    assert kc.totals("xla", times, {}) == {"container": 10.0, "dot": 1.0, "loop": 2.0}
