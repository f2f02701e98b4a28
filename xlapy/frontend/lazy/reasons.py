"""Why a pending graph was cut: the read that needed a value, the xlapy function the user called that made
the read (if any), and the user's source line. A table maps the reading method to the words of the report."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

_XLAPY_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# the method that read the value -> what the user did
READS = {
    "__bool__": "bool() (a Python branch on a value)",
    "__array__": "np.asarray",
    "item": ".item()",
    "tolist": ".tolist()",
    "__float__": "float()",
    "__int__": "int()",
    "__index__": "use as a Python int (index, size)",
    "__complex__": "complex()",
    "__repr__": "print / repr",
    "__str__": "print / str",
    "__format__": "format",
    "__iter__": "iteration",
    "__reduce__": "pickling",
    "__dlpack__": "DLPack export",
    "block_until_ready": "block_until_ready()",
    "host_value": "a host value (a jitted call or an op run on the host)",
}


@dataclass(frozen=True)
class CutReason:
    read: str          # what needed the value (READS' words, or a named cut: "xlapy.sync()", "size limit")
    api: str           # the xlapy function the user called that read it ("" when the user read it directly)
    where: str         # the user's file:line

    def __str__(self) -> str:
        what = f"{self.api}: {self.read}" if self.api else self.read
        return f"{what} at {self.where}"


_IN_XLAPY: dict[str, bool] = {}        # file name -> whether it is xlapy's (a cut's reason walks the stack)


def _in_xlapy(frame) -> bool:
    name = frame.f_code.co_filename
    known = _IN_XLAPY.get(name)
    if known is None:
        known = name.startswith("<xlapy") or os.path.abspath(name).startswith(_XLAPY_DIR + os.sep)
        if len(_IN_XLAPY) < 4096:
            _IN_XLAPY[name] = known
    return known


def _api_name(frame) -> str:
    if frame.f_code.co_filename.startswith("<xlapy"):          # jit's generated warm-call code
        return "a jitted call"
    owner = frame.f_locals.get("self")
    if frame.f_code.co_name == "__call__" and owner is not None:
        return {"Jitted": "a jitted call"}.get(type(owner).__name__, f"{type(owner).__name__}.__call__")
    rel = os.path.relpath(os.path.abspath(frame.f_code.co_filename), os.path.dirname(_XLAPY_DIR))
    module = rel[:-3].replace(os.sep, ".") if rel.endswith(".py") else rel
    for private in (".frontend.array", ".frontend.lazy.graph"):
        if module.endswith(private):
            return ""
    parts = [p for p in module.split(".") if not p.startswith("_")]
    return ".".join(parts[:2] + [frame.f_code.co_name]) if len(parts) > 1 else frame.f_code.co_name


def read_reason(named: str | None = None) -> CutReason:
    """The reason of a cut made now: `named` (a cut by name), else the reading method found on the stack."""
    frame = sys._getframe(1)
    read = named
    outermost = None
    while frame is not None and (_in_xlapy(frame) or "importlib" in frame.f_code.co_filename):
        if read is None and frame.f_code.co_name in READS:
            read = READS[frame.f_code.co_name]
        outermost = frame
        frame = frame.f_back
    where = f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "<unknown>"
    api = _api_name(outermost) if outermost is not None and named is None else ""
    if api.endswith("." + "__getattr__") or api.split(".")[-1] in READS:
        api = ""
    return CutReason(read or "a value was read", api, where)
