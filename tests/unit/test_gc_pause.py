"""hlo/gc_pause.py: the parser and Module.clone build a module with the cyclic collector paused (a big module's
objects made with it on ran full collections of the caller's whole heap), and leave it as they found it."""
import gc

import pytest

from xlapy.errors import HloParseError
from xlapy.hlo import parse
from xlapy.hlo import parser as parser_module

TEXT = "HloModule m\nENTRY main {\n  x = f32[4] parameter(0)\n  ROOT n = f32[4] negate(x)\n}\n"


@pytest.fixture
def collector_state():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_parse_and_clone_run_with_the_collector_paused(monkeypatch, collector_state):
    gc.enable()
    seen = []
    real = parser_module.Parser.module
    monkeypatch.setattr(parser_module.Parser, "module", lambda self: seen.append(gc.isenabled()) or real(self))
    module = parse(TEXT)
    assert seen == [False] and gc.isenabled()
    import xlapy.hlo.ir as ir
    real_clone = ir._clone_module
    monkeypatch.setattr(ir, "_clone_module", lambda m: seen.append(gc.isenabled()) or real_clone(m))
    assert module.clone().to_text() == module.to_text()
    assert seen == [False, False] and gc.isenabled()


def test_a_disabled_collector_stays_disabled_and_errors_restore_it(collector_state):
    gc.disable()
    parse(TEXT).clone()
    assert not gc.isenabled()
    gc.enable()
    with pytest.raises(HloParseError):
        parse(TEXT.replace("negate(x)", "negate(y)"))
    assert gc.isenabled()
