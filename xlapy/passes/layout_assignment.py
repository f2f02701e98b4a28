"""LayoutAssignment: every array shape gets a layout; the CPU default is row-major (minor_to_major = n-1..0).

Layouts already present (parsed from text) are kept. The interpreter ignores layouts; the CPU backend reads them
to emit loops in memory order, and a value's buffer holds it in the layout of the instruction that wrote it.

One layout is a contract, not a choice: the entry result's. The caller reads the result buffers in the layout
the module declares for its result (`entry_computation_layout`, else the root's own shape), so every leaf of the
root must be produced in that layout. A tuple may declare element layouts its operands do not have: TF's
`tf.image.resize` and `tf.sort(axis=0)` dump `tuple(f32[3,2]{0,1} %transpose)` as `(f32[3,2]{1,0})`. As XLA's
layout assignment does, such a leaf gets a copy into the declared layout:

| root leaf                                  | becomes                                   |
|--------------------------------------------|-------------------------------------------|
| its layout is the result's                 | itself                                    |
| an array in another layout                 | `copy` with the result's layout           |
| a tuple                                    | the same rule, element by element         |
| a tuple from anything else (while, call)   | get-tuple-element per element, then above |

An alias (tuple, get-tuple-element, opt-barrier, a call's result) is in the layouts of the values it forwards,
whatever it declares (`value_shape`).

The layouts inside a module the pipeline optimizes are not a contract either. JAX's and TF's converters write a
transpose as a layout change and carry that layout on through the elementwise ops after it, so a training step's
optimizer reads row-major parameters and a transposed gradient and writes the new state transposed (gpt2/train:
36 layout-changing fusions). XLA compiles such text through StableHLO, which drops every layout: all row-major.
The JIT (numpy arrays in and out: the executable transposes a leaf of another layout itself) asks for that too,
`entry_layouts="row-major"`; AOT keeps the declared ones, its C caller's contract:

| entry_layouts | entry parameters and result | everything else |
|---------------|-----------------------------|-----------------|
| "declared"    | as declared                 | as written, else row-major |
| "row-major"   | row-major                   | row-major |

A module holding a `bitcast` (its meaning is the two layouts) keeps them as written in either mode.
"""
from __future__ import annotations

from ..errors import XlapyError
from ..hlo import Computation, Instruction, Module, Shape
from ..hlo.lexer import Cursor
from ..hlo.parser_shapes import parse_shape
from ..hlo.shape import Layout
from .build import emit
from .pipeline import Pass


def with_default_layouts(shape: Shape) -> Shape:
    if shape.is_tuple:
        return Shape.tuple_of(with_default_layouts(s) for s in shape.tuple_shapes)
    if not shape.is_array or shape.layout is not None:
        return shape
    return shape.with_layout(shape.default_layout())


def _physical(shape: Shape):
    """What a buffer's layout decides: the dimension order of every array leaf (rank <= 1 has only one)."""
    if shape.is_tuple:
        return tuple(_physical(s) for s in shape.tuple_shapes)
    if not shape.is_array or shape.rank <= 1:
        return None
    return with_default_layouts(shape).layout.minor_to_major


def same_layouts(a: Shape, b: Shape) -> bool:
    """Do values of shapes a and b (same dims and types) sit in memory alike?"""
    return _physical(a) == _physical(b)


def _declared_result(module: Module) -> Shape | None:
    """The result shape of the header's entry_computation_layout, when there is one that parses."""
    text = module.attrs.get("entry_computation_layout")
    if not isinstance(text, str):
        return None
    cur = Cursor(text)
    try:
        cur.expect("{")
        cur.expect("(")
        cur.items(")", "between parameter shapes", lambda: parse_shape(cur))
        cur.expect("->")
        return parse_shape(cur)
    except XlapyError:
        return None


def entry_result_shape(module: Module) -> Shape:
    """The shape, with layouts, the entry's result buffers hold: the header's entry_computation_layout where it
    describes the root (same dims and types), else the root's own shape."""
    root_shape = with_default_layouts(module.entry.root.shape)
    declared = _declared_result(module)
    if declared is not None and declared.without_layout() == root_shape.without_layout():
        return with_default_layouts(declared)
    return root_shape


def value_shape(inst: Instruction, args: list[Shape] | None = None) -> Shape:
    """inst's shape with the layouts its buffers really have: what an alias (tuple, get-tuple-element,
    opt-barrier, a call's result) declares need not be its operands' layouts, which are the ones it forwards.
    args: the value shapes of the parameters, inside a called computation."""
    op = inst.opcode
    if op == "tuple":
        return Shape.tuple_of(value_shape(o, args) for o in inst.operands)
    if op == "get-tuple-element":
        return value_shape(inst.operands[0], args).tuple_shapes[int(inst.attrs["index"])]
    if op in ("opt-barrier", "add-dependency"):
        return value_shape(inst.operands[0], args)
    if op == "call":
        return value_shape(inst.attrs["to_apply"].root, [value_shape(o, args) for o in inst.operands])
    if op == "parameter" and args is not None:
        return args[inst.parameter_number]
    return inst.shape


def conform(comp: Computation, inst: Instruction, want: Shape) -> Instruction:
    """inst's value in the layouts of `want` (same dims and types): inst itself when its buffers are in those
    layouts already, else copies of the leaves whose layout differs, assembled into tuples shaped `want`."""
    if not want.is_tuple:
        if same_layouts(value_shape(inst), want):
            return inst
        return emit(comp, "copy", [inst], shape=want, name=f"{inst.name}.relayout")
    if inst.opcode == "tuple":
        parts = list(inst.operands)
    elif same_layouts(value_shape(inst), want):
        return inst
    else:
        parts = [emit(comp, "get-tuple-element", [inst], {"index": k}, shape=inst.shape.tuple_shapes[k])
                 for k in range(len(want.tuple_shapes))]
    elements = [conform(comp, part, w) for part, w in zip(parts, want.tuple_shapes)]
    if inst.opcode == "tuple" and inst.shape == want and all(e is p for e, p in zip(elements, parts)):
        return inst
    return emit(comp, "tuple", elements, shape=want)


ENTRY_LAYOUTS = ("declared", "row-major")


def _row_major(shape: Shape) -> Shape:
    """shape with every array leaf row-major; what a layout says after the ':' (element size, memory space) stays."""
    if shape.is_tuple:
        return Shape.tuple_of(_row_major(s) for s in shape.tuple_shapes)
    if not shape.is_array:
        return shape
    tail = shape.layout.tail if shape.layout is not None else ""
    return shape.with_layout(Layout(shape.default_layout().minor_to_major, tail))


class LayoutAssignment(Pass):
    name = "layout-assignment"

    def __init__(self, entry_layouts: str = "declared"):
        if entry_layouts not in ENTRY_LAYOUTS:
            raise XlapyError(f"layout-assignment: entry_layouts must be one of {', '.join(ENTRY_LAYOUTS)}, "
                             f"got {entry_layouts!r}")
        self.entry_layouts = entry_layouts

    def run(self, module: Module) -> bool:
        free = self.entry_layouts == "row-major" and not any(i.opcode == "bitcast" for i in module.instructions())
        layout = _row_major if free else with_default_layouts
        changed = False
        for inst in module.instructions():
            new = layout(inst.shape)
            if new != inst.shape:
                inst.shape = new
                changed = True
        if free and module.attrs.pop("entry_computation_layout", None) is not None:
            changed = True
        entry = module.entry
        if entry is not None:
            root = entry.root
            result = conform(entry, root, entry_result_shape(module))
            if result is not root:
                entry.root = result
                changed = True
        return changed
