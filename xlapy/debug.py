"""Debug options read from XLA_FLAGS, with XLA's flag names (xla/debug_options_flags.cc).

  --xla_dump_to=DIR               where dumps go
  --xla_dump_hlo_as_text          dump HLO text (the default format when --xla_dump_to is set)
  --xla_dump_hlo_as_dot           dump a Graphviz graph of each dumped module
  --xla_dump_hlo_as_html          dump a self-contained HTML page with the graph
  --xla_dump_hlo_pass_re=REGEX    also dump after every pass whose name matches
  --xla_dump_hlo_module_re=REGEX  only dump modules whose name matches
  --xla_disable_hlo_passes=a,b    never run these passes
  --xla_hlo_profile               instrument every compiled kernel and print the kernel table at exit
                                  (xlapy/profiler.py)
  --xla_force_host_platform_device_count=N  N host devices in this process (backends/devices.py; default 1)
"""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

from .errors import XlapyError


@dataclass(frozen=True)
class DebugOptions:
    dump_to: str = ""
    dump_hlo_as_text: bool = False
    dump_hlo_as_dot: bool = False
    dump_hlo_as_html: bool = False
    dump_hlo_pass_re: str = ""
    dump_hlo_module_re: str = ""
    disable_hlo_passes: frozenset[str] = field(default_factory=frozenset)
    hlo_profile: bool = False
    force_host_platform_device_count: int = 1

    @property
    def dumping(self) -> bool:
        return bool(self.dump_to)

    def dumps_module(self, name: str) -> bool:
        return self.dumping and (not self.dump_hlo_module_re or re.search(self.dump_hlo_module_re, name) is not None)

    def dumps_pass(self, pass_name: str) -> bool:
        return bool(self.dump_hlo_pass_re) and re.search(self.dump_hlo_pass_re, pass_name) is not None

    def text_wanted(self) -> bool:
        return self.dump_hlo_as_text or not (self.dump_hlo_as_dot or self.dump_hlo_as_html)


_BOOL = {"true": True, "false": False, "1": True, "0": False}
# flag -> (field, kind)
_FLAGS = {
    "xla_dump_to": ("dump_to", "str"),
    "xla_dump_hlo_as_text": ("dump_hlo_as_text", "bool"),
    "xla_dump_hlo_as_dot": ("dump_hlo_as_dot", "bool"),
    "xla_dump_hlo_as_html": ("dump_hlo_as_html", "bool"),
    "xla_dump_hlo_pass_re": ("dump_hlo_pass_re", "regex"),
    "xla_dump_hlo_module_re": ("dump_hlo_module_re", "regex"),
    "xla_disable_hlo_passes": ("disable_hlo_passes", "list"),
    "xla_hlo_profile": ("hlo_profile", "bool"),
    "xla_force_host_platform_device_count": ("force_host_platform_device_count", "count"),
}


def parse_flags(text: str) -> DebugOptions:
    """Parse an XLA_FLAGS string. Unknown xla_* flags are ignored (XLA has hundreds); malformed ones raise."""
    values: dict = {}
    for word in shlex.split(text or ""):
        if not word.startswith("--"):
            raise XlapyError(f"XLA_FLAGS: expected --flag or --flag=value, got {word!r}")
        name, eq, value = word[2:].partition("=")
        if name not in _FLAGS:
            continue
        fld, kind = _FLAGS[name]
        if kind == "bool":
            if eq and value.lower() not in _BOOL:
                raise XlapyError(f"XLA_FLAGS: --{name} takes true or false, got {value!r}")
            values[fld] = _BOOL[value.lower()] if eq else True
        elif kind == "count":
            if not value.isdigit() or int(value) < 1:
                raise XlapyError(f"XLA_FLAGS: --{name} takes a positive integer, got {value!r}")
            values[fld] = int(value)
        elif kind == "list":
            values[fld] = frozenset(v for v in value.split(",") if v)
        else:
            if kind == "regex":
                try:
                    re.compile(value)
                except re.error as e:
                    raise XlapyError(f"XLA_FLAGS: --{name}={value!r} is not a valid regular expression ({e})")
            values[fld] = value
    return DebugOptions(**values)


def options() -> DebugOptions:
    """The options in force now (XLA_FLAGS is re-read each call so tests can set it)."""
    return parse_flags(os.environ.get("XLA_FLAGS", ""))
