"""Checking an AOT target (triple, CPU, features) before LLVM sees it.

LLVM does not reject a bad target politely: an unknown CPU or feature only prints a warning ("'notacpu' is not a
recognized processor for this target (ignoring processor)"), and some combinations then abort the whole process
during code generation ("LLVM ERROR: 64-bit code requested on a subtarget that doesn't support it!" for
`--cpu i386` or an unknown CPU on x86-64). llvmlite cannot list a target's CPUs or features, and an abort cannot
be caught, so a combination other than the defaults is tried first in a child process: it builds the target
machine and emits a one-function object. A child that dies, or warns about a name, makes the combination an
XlapyError naming the bad value and the closest valid names (from LLVM's own `-mcpu=help` listing, which the
child prints on failure). Answers are cached per process.

| input | rule |
|---|---|
| triple | non-empty, known to LLVM (`Target.from_triple`), and one the child can emit code for |
| cpu | non-empty; None, "generic" and "host" (this machine's triple only) need no child |
| features | a comma-separated list of `+name` / `-name`, each known to LLVM for the target |
"""
from __future__ import annotations

import difflib
import re
import subprocess
import sys
import threading

from ...errors import XlapyError

# What the child runs: argv = triple, cpu, features. It prints LLVM's -mcpu=help listing of the target's CPUs
# and features on stderr, then a separator, then tries the combination (LLVM's warnings follow on stderr) and
# prints "ok" on stdout once an object was emitted.
_CHILD = r"""
import sys
import llvmlite.binding as llvm
llvm.initialize_all_targets()
llvm.initialize_all_asmprinters()
triple, cpu, features = sys.argv[1:4]
target = llvm.Target.from_triple(triple)
target.create_target_machine(cpu="help", features="", opt=0)
sys.stderr.write("\n---- check ----\n")
sys.stderr.flush()
tm = target.create_target_machine(cpu=cpu, features=features, opt=0, reloc="pic")
mod = llvm.parse_assembly("define i32 @f(i32 %x) {\n  %y = add i32 %x, 1\n  ret i32 %y\n}\n")
mod.triple = triple
tm.emit_object(mod)
print("ok", flush=True)
"""
_SEPARATOR = "\n---- check ----\n"

_FEATURE = re.compile(r"[+-][A-Za-z0-9_.-]+")
_cache: dict[tuple[str, str, str], str | None] = {}        # (triple, cpu, features) -> error message or None
_lock = threading.Lock()


def check_values(triple: str | None, cpu: str | None, features: str | None) -> None:
    """The checks that need no LLVM: empty strings and the shape of the feature list."""
    for name, value in (("target triple", triple), ("cpu", cpu)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise XlapyError(f"AOT {name} must be a non-empty string, got {value!r} (leave it out for the default)")
    if features is not None:
        if not isinstance(features, str):
            raise XlapyError(f"AOT features must be a string like '+avx2,-fma', got {features!r}")
        for f in features.split(",") if features else ():
            if not _FEATURE.fullmatch(f):
                raise XlapyError(f"bad target feature {f!r} in {features!r}: expected a comma-separated list like "
                                 f"'+avx2,-fma'")


def probe(triple: str, cpu: str, features: str) -> None:
    """Raise XlapyError unless LLVM builds code for (triple, cpu, features) without a warning or an abort."""
    key = (triple, cpu, features)
    with _lock:
        if key not in _cache:
            _cache[key] = _run_child(triple, cpu, features)
        error = _cache[key]
    if error is not None:
        raise XlapyError(error)


def _run_child(triple: str, cpu: str, features: str) -> str | None:
    """None when the combination works, else the error message."""
    try:
        child = subprocess.run([sys.executable, "-c", _CHILD, triple, cpu, features], capture_output=True,
                               text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        return f"cannot check target {triple} (cpu {cpu!r}, features {features!r}) in a child process: {e}"
    listing, _, err = child.stderr.partition(_SEPARATOR)
    where = f"target {triple}"
    bad_cpu = re.search(r"'([^']*)' is not a recognized processor", err)
    if bad_cpu:
        return f"unknown CPU {bad_cpu.group(1)!r} for {where}{_suggest(bad_cpu.group(1), _names(listing, 'CPUs'))}"
    bad_features = re.findall(r"'([^']*)' is not a recognized feature", err)
    if bad_features:
        names = sorted(dict.fromkeys(bad_features))
        sign = names[0][:1] if names[0][:1] in "+-" else "+"
        known = [sign + n for n in _names(listing, "features")]
        return (f"unknown target feature{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))} for {where}"
                f"{_suggest(names[0], known)}")
    if child.returncode != 0 or "ok" not in child.stdout:
        llvm_error = next((line for line in err.splitlines() if "LLVM ERROR" in line), None)
        reason = llvm_error.strip() if llvm_error else (err.strip().splitlines() or ["no output"])[-1]
        return f"LLVM cannot generate code for {where} with cpu {cpu!r} and features {features!r}: {reason}"
    return None


def _names(listing: str, kind: str) -> list[str]:
    """The names in LLVM's -mcpu=help section "Available {kind} for this target:"."""
    section = listing.partition(f"Available {kind} for this target:")[2].split("Available ")[0]
    return [m.group(1) for m in re.finditer(r"^\s+(\S+)\s+- ", section, re.M)]


def _suggest(name: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(name, valid, n=4, cutoff=0.6)
    if close:
        return f" (did you mean {', '.join(close)}?)"
    return f" ({len(valid)} known: {', '.join(valid[:8])}, ...)" if valid else ""


__all__ = ["check_values", "probe"]
