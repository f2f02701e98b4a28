"""parallel._foreign_values (the one-pass capture collection) finds exactly the caller values a worker uses
that the attribute-by-attribute walk (_foreign_uses) finds, including phi incomings, GEP pointers and call
arguments, and lists the instructions that use them."""
from llvmlite import ir

from xlapy.backends.cpu import parallel

I64, F32 = ir.IntType(64), ir.FloatType()


def _module():
    m = ir.Module("m")
    callee = ir.Function(m, ir.FunctionType(F32, [F32, I64]), "callee")
    caller = ir.Function(m, ir.FunctionType(ir.VoidType(), [F32.as_pointer(), I64]), "caller")
    b = ir.IRBuilder(caller.append_basic_block("entry"))
    ptr, n = caller.args
    ptr.name, n.name = "buf", "n"
    doubled = b.mul(n, ir.Constant(I64, 2), name="doubled")
    loaded = b.load(ptr, name="loaded")
    worker = ir.Function(m, ir.FunctionType(ir.VoidType(), [I64]), "worker")
    wb = ir.IRBuilder(worker.append_basic_block("entry"))
    loop = worker.append_basic_block("loop")
    done = worker.append_basic_block("done")
    wb.branch(loop)
    wb.position_at_end(loop)
    phi = wb.phi(I64, name="i")
    phi.add_incoming(doubled, worker.blocks[0])           # a caller value reaching the worker via a phi only
    gep = wb.gep(ptr, [phi], name="at")                  # the caller's argument as a GEP pointer
    v = wb.call(callee, [loaded, worker.args[0]])        # a caller value as a call argument
    wb.store(v, gep)
    nxt = wb.add(phi, ir.Constant(I64, 1))
    phi.add_incoming(nxt, loop)
    wb.cbranch(wb.icmp_signed("<", nxt, worker.args[0]), loop, done)
    wb.position_at_end(done)
    wb.ret_void()
    b.ret_void()
    return worker, [doubled, ptr, loaded], [phi, gep, v]


def test_foreign_values_match_the_generic_walk():
    worker, expected, users = _module()
    foreign, found_users = parallel._foreign_values(worker)
    assert sorted(map(id, foreign.values())) == sorted(map(id, expected))
    seen = {}

    def collect(v):
        if parallel._owner(v) is not worker:
            seen[id(v)] = v
        return v
    parallel._foreign_uses(worker, collect)
    assert set(seen) == set(foreign)
    assert [id(u) for u in found_users] == [id(u) for u in users]


def test_replacing_only_the_users_rewrites_every_use():
    worker, expected, users = _module()
    foreign, found_users = parallel._foreign_values(worker)
    b = ir.IRBuilder(worker.blocks[0])
    b.position_at_start(worker.blocks[0])
    stand_ins = {id(v): b.load(b.inttoptr(ir.Constant(I64, 0), v.type.as_pointer()), name="cap")
                 for v in foreign.values()}
    parallel._foreign_uses(worker, lambda v: stand_ins.get(id(v), v), found_users)
    assert parallel._foreign_values(worker) == ({}, [])
    text = str(worker)
    for v in expected:
        assert f'%"{v.name}"' not in text
