"""Derivative rules of the collectives (frontend/parallel/collectives.py emits them; JAX's rules):

    all-reduce add      linear: JVP the same all-reduce; VJP all-reduce of the cotangent (psum transposes to
                        psum, so grad(psum(x)) is the axis size on every member, as in JAX)
    all-gather          JVP the same; VJP reduce-scatter (sum) of the cotangent along the gathered dimension
    reduce-scatter      JVP the same; VJP all-gather of the cotangent
    collective-permute  JVP the same; VJP the permutation back (pairs reversed)
    all-to-all          JVP the same; VJP all-to-all again (over one dimension it is its own inverse)

all-reduce with max / min (pmax, pmin) has no rule, as in JAX.
"""
from __future__ import annotations

from .rules_common import AutodiffError


def _same(b, inst, ts):
    return b.emit(inst.opcode, [ts[0]], inst.attrs, shape=inst.shape)


def _all_reduce_jvp(b, inst, ts):
    _additive(inst)
    return _same(b, inst, ts)


def _additive(inst) -> None:
    kind = inst.attrs["to_apply"].root.opcode
    if kind != "add":
        raise AutodiffError(f"differentiation of an all-reduce with reducer '{kind}' ({inst.name}: pmax / pmin) is "
                            f"not supported, as in JAX")


def _all_reduce_vjp(b, inst, ct):
    _additive(inst)
    return [b.emit("all-reduce", [ct], inst.attrs, shape=inst.shape)]


def _collective_attrs(inst) -> dict:
    keep = ("channel_id", "replica_groups", "use_global_device_ids", "dimensions", "frontend_attributes")
    return {k: v for k, v in inst.attrs.items() if k in keep}


def _all_gather_vjp(b, inst, ct):
    x = inst.operands[0]
    attrs = dict(_collective_attrs(inst), to_apply=b.reducer("add", x.shape.element_type))
    return [b.emit("reduce-scatter", [ct], attrs, shape=x.shape.without_layout())]


def _reduce_scatter_vjp(b, inst, ct):
    x = inst.operands[0]
    return [b.emit("all-gather", [ct], _collective_attrs(inst), shape=x.shape.without_layout())]


def _reversed_pairs(text: str) -> str:
    pairs = [p.strip("{}").split(",") for p in text.strip()[1:-1].split("},{") if p.strip("{}")]
    return "{" + ",".join("{%s,%s}" % (d, s) for s, d in pairs) + "}"


def _collective_permute_vjp(b, inst, ct):
    attrs = dict(inst.attrs, source_target_pairs=_reversed_pairs(inst.attrs.get("source_target_pairs", "{}")))
    tag = attrs.get("frontend_attributes")
    if isinstance(tag, str) and 'xlapy_perm="' in tag:
        head, rest = tag.split('xlapy_perm="', 1)
        perm, tail = rest.split('"', 1)
        back = ";".join(":".join(reversed(p.split(":"))) for p in perm.split(";") if p)
        attrs["frontend_attributes"] = f'{head}xlapy_perm="{back}"{tail}'
    return [b.emit("collective-permute", [ct], attrs, shape=inst.shape)]


def _all_to_all_vjp(b, inst, ct):
    return [b.emit("all-to-all", [ct], inst.attrs, shape=inst.operands[0].shape.without_layout())]


JVP = {"all-reduce": _all_reduce_jvp, "all-gather": _same, "reduce-scatter": _same, "collective-permute": _same,
       "all-to-all": _same}

VJP = {"all-reduce": _all_reduce_vjp, "all-gather": _all_gather_vjp, "reduce-scatter": _reduce_scatter_vjp,
       "collective-permute": _collective_permute_vjp, "all-to-all": _all_to_all_vjp}
