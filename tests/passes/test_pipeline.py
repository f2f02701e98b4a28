"""Pass machinery: Pipeline, FixedPoint, disabling by name, the invariant checker, dumps with XLA's names."""
import pytest

import xlapy
from xlapy import debug
from xlapy.errors import HloVerifierError, XlapyError
from xlapy.passes import FixedPoint, Pass, Pipeline
from xlapy.passes.optimize import optimize
from xlapy.passes.registry import PASSES, available, make_pass

TEXT = """HloModule m

ENTRY e {
  p = f32[4] parameter(0)
  n = f32[4] negate(p)
  nn = f32[4] negate(n)
  ROOT e = f32[4] exponential(nn)
}
"""


class Counter(Pass):
    """Changes the module `times` times, then reports no change."""
    name = "counter"

    def __init__(self, times):
        self.times, self.runs = times, 0

    def run(self, module):
        self.runs += 1
        return self.runs <= self.times


class Breaker(Pass):
    """Makes the module invalid: the root's declared shape stops matching its operands."""
    name = "breaker"

    def run(self, module):
        module.entry.root.shape = xlapy.hlo.Shape.array("f32", (7,))
        return True


def test_fixed_point_runs_until_no_change():
    c = Counter(3)
    fp = FixedPoint("fp", [c])
    assert fp.run(xlapy.hlo.parse(TEXT), debug.DebugOptions())
    assert c.runs == 4 and fp.iterations_run == 4


def test_fixed_point_skips_a_pass_that_found_nothing_since_the_last_change():
    """A pass that changed nothing, with no change since, would find nothing again: the last iteration runs only
    what ran before the last change (unless the pass says it depends on more than the module)."""
    a, idle, stateful = Counter(2), Counter(0), Counter(0)
    stateful.depends_on_module_only = False
    fp = FixedPoint("fp", [a, idle, stateful])
    assert fp.run(xlapy.hlo.parse(TEXT), debug.DebugOptions())
    assert fp.iterations_run == 3 and a.runs == 3
    assert idle.runs == 2 and stateful.runs == 3


def test_fixed_point_has_an_iteration_cap():
    c = Counter(1000)
    fp = FixedPoint("fp", [c], max_iterations=5)
    fp.run(xlapy.hlo.parse(TEXT), debug.DebugOptions())
    assert c.runs == 5


def test_disabled_pass_does_not_run():
    c = Counter(1)
    Pipeline("p", [c]).run(xlapy.hlo.parse(TEXT), debug.parse_flags("--xla_disable_hlo_passes=counter,other"))
    assert c.runs == 0


def test_invariant_checker_names_the_pass():
    with pytest.raises(HloVerifierError, match="after pass breaker"):
        Pipeline("p", [Breaker()], check_invariants=True).run(xlapy.hlo.parse(TEXT), debug.DebugOptions())


def test_pass_crash_names_the_pass():
    class Crash(Pass):
        name = "crash"

        def run(self, module):
            raise KeyError("oops")
    with pytest.raises(XlapyError, match="pass crash"):
        Pipeline("p", [Crash()]).run(xlapy.hlo.parse(TEXT), debug.DebugOptions())


def test_dumps_have_xla_names(tmp_path):
    opts = debug.parse_flags(f"--xla_dump_to={tmp_path} --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=.* "
                             "--xla_dump_hlo_as_html --xla_dump_hlo_as_dot")
    m = xlapy.hlo.parse(TEXT)
    pipeline = Pipeline("simplification", [make_pass("algsimp"), make_pass("dce")])
    optimize(m, pipeline, options=opts)
    names = sorted(p.name for p in tmp_path.iterdir())
    prefix = names[0].split(".")[0] + ".m"
    assert f"{prefix}.before_optimizations.txt" in names
    assert f"{prefix}.cpu_after_optimizations.txt" in names
    assert f"{prefix}.0001.simplification.after_algsimp.before_dce.txt" in names
    assert f"{prefix}.0002.simplification.after_dce.before_pipeline-end.txt" in names
    assert f"{prefix}.cpu_after_optimizations.html" in names and f"{prefix}.cpu_after_optimizations.dot" in names
    after = (tmp_path / f"{prefix}.cpu_after_optimizations.txt").read_text()
    assert "negate" not in after and xlapy.hlo.parse(after)
    html = (tmp_path / f"{prefix}.cpu_after_optimizations.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "exponential" in html


def test_module_re_filters_dumps(tmp_path):
    opts = debug.parse_flags(f"--xla_dump_to={tmp_path} --xla_dump_hlo_module_re=^other$")
    optimize(xlapy.hlo.parse(TEXT), Pipeline("p", [make_pass("dce")]), options=opts)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("flags, message", [
    ("--xla_dump_hlo_as_text=maybe", "takes true or false"),
    ("--xla_dump_hlo_pass_re=(", "not a valid regular expression"),
    ("xla_dump_to=/tmp", "expected --flag"),
])
def test_bad_flags_are_clear_errors(flags, message):
    with pytest.raises(XlapyError, match=message):
        debug.parse_flags(flags)


def test_unknown_pass_lists_known_names():
    with pytest.raises(XlapyError, match="unknown pass 'nope'.*algsimp"):
        make_pass("nope")


def test_every_registered_pass_exists():
    missing = [name for name in PASSES if not available(name)]
    assert not missing, f"registered but not implemented: {missing}"
