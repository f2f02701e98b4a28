"""A toy out-of-tree xlapy backend, found through its entry point (../xlapy_toy_backend-0.1.dist-info): the
interpreter under another name, declaring only a few elementwise opcodes. tests/unit/test_backend_registry.py puts
this folder on sys.path, as installing the package would."""
from xlapy.backends import Backend
from xlapy.backends.interpreter import compile_module as interpret

OPCODES = frozenset({"parameter", "constant", "broadcast", "convert", "tuple", "get-tuple-element", "add",
                     "subtract", "multiply", "negate"})

COMPILED: list[str] = []        # the names of the modules it compiled, for the tests


class ToyExecutable:
    """The Executable interface: exe(*arrays), as_text(), module, backend."""

    backend = "toy"

    def __init__(self, module):
        self.module = module
        self._run = interpret(module)

    def __call__(self, *arrays):
        return self._run(*arrays)

    def as_text(self) -> str:
        return self.module.to_text()


def compile_module(module, **options):
    COMPILED.append(module.name)
    return ToyExecutable(module)


BACKEND = Backend("toy", compile_module, priority=-10, supported_opcodes=OPCODES)
