"""`xlapy run|verify|fmt`: results on good input; one line and exit status 2 on every bad input."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from xlapy.tools import npz
from xlapy.tools.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEED_HLO, SEED_NPZ = str(EXAMPLES / "seed_sum.hlo"), str(EXAMPLES / "seed_sum.npz")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_prints_summary_and_writes_outputs(capsys, tmp_path):
    out_path = tmp_path / "out.npz"
    code, out, err = run(capsys, "run", SEED_HLO, "--inputs", SEED_NPZ, "--out", str(out_path))
    assert code == 0, err
    args = npz.numbered(npz.load(SEED_NPZ), "arg")
    expected = np.sum(args[0] + args[1] * args[2], dtype=np.float32)
    got = npz.load(out_path)["out0"]
    assert got.dtype == np.float32 and got.shape == ()
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert out.startswith("out0: float32[]")


def test_verify_and_fmt(capsys):
    code, out, _ = run(capsys, "verify", SEED_HLO)
    assert code == 0 and "ok" in out
    code, out, _ = run(capsys, "fmt", SEED_HLO)
    assert code == 0 and "reduce(" in out and out.startswith("HloModule jit__lambda_")


def test_bf16_npz_round_trip(tmp_path):
    import ml_dtypes
    a = np.array([1.5, -2.0, np.nan], dtype=ml_dtypes.bfloat16)
    npz.save(tmp_path / "x.npz", {"arg0": a})
    b = npz.load(tmp_path / "x.npz")["arg0"]
    assert b.dtype == a.dtype and np.array_equal(a.view(np.uint16), b.view(np.uint16))


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _npz(tmp_path, **arrays):
    p = tmp_path / "named.npz"
    np.savez(p, **arrays)
    return str(p)


# a result no machine can allocate (3.5 PiB), and a shape whose element count overflows int64
HUGE_RESULT = ("HloModule huge\nENTRY e {\n  c = f32[] constant(0)\n"
               "  ROOT b = f32[100000,100000,100000] broadcast(c), dimensions={}\n}\n")
OVERFLOW = ("HloModule ovf\nENTRY e {\n  c = f32[] constant(0)\n"
            "  ROOT b = f32[4000000000,4000000000,4000000000] broadcast(c), dimensions={}\n}\n")

BAD = [
    # (argv builder, expected fragment of the one-line error)
    (lambda t: [], "required"),
    (lambda t: ["run"], "required"),
    (lambda t: ["frobnicate", SEED_HLO], "invalid choice"),
    (lambda t: ["run", str(t / "missing.hlo")], "no such file"),
    (lambda t: ["run", SEED_HLO], "takes 3 arguments"),
    (lambda t: ["run", SEED_HLO, "--inputs", str(t / "missing.npz")], "no such file"),
    (lambda t: ["run", SEED_HLO, "--inputs", _write(t, "junk.npz", "not a zip")], "not a readable .npz"),
    (lambda t: ["run", SEED_HLO, "--inputs", SEED_NPZ, "--backend", "tpu"], "invalid choice"),
    (lambda t: ["run", _write(t, "bad.hlo", "HloModule m\nENTRY e {\n  ROOT x = f32[] bogus-op()\n}\n")],
     "bad.hlo:3:"),
    (lambda t: ["verify", _write(t, "bad2.hlo", "HloModule m\n\nENTRY e {\n  a = f32[2] parameter(0)\n"
                                 "  ROOT b = f32[3] negate(a)\n}\n")], "f32[3]"),
    # user-caused failures are `error:` lines, not internal errors (issue 12)
    (lambda t: ["run", SEED_HLO, "--inputs", SEED_NPZ, "--out", str(t / "no" / "such" / "dir" / "o.npz")],
     "error: cannot write"),
    (lambda t: ["run", SEED_HLO, "--inputs", _npz(t, x=np.ones(3, np.float32))],
     "takes 3 arguments (arg0, arg1, arg2); " ),
    (lambda t: ["run", SEED_HLO, "--inputs", _npz(t, x=np.ones(3, np.float32))], "gives 0 (keys x)"),
    (lambda t: ["run", _write(t, "huge.hlo", HUGE_RESULT)], "error: "),
    (lambda t: ["run", _write(t, "huge.hlo", HUGE_RESULT), "--backend", "cpu"], "error: out of memory"),
    (lambda t: ["verify", _write(t, "ovf.hlo", OVERFLOW)], "more than int64 can count"),
    (lambda t: ["run", _write(t, "ovf.hlo", OVERFLOW)], "more than int64 can count"),
    (lambda t: ["opt", SEED_HLO, "--passes", ""], "--passes needs at least one pass name"),
    (lambda t: ["opt", SEED_HLO, "--passes", "algsimp,,dce"], "an empty pass name"),
    (lambda t: ["opt", SEED_HLO, "--passes", "algsimp,"], "an empty pass name"),
]


@pytest.mark.parametrize("argv, fragment", BAD)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, argv, fragment):
    code, out, err = run(capsys, *argv(tmp_path))
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in err and "internal error" not in err


def test_wrong_input_shape_names_the_argument(capsys, tmp_path):
    p = tmp_path / "wrong.npz"
    np.savez(p, arg0=np.zeros((2, 2), np.float32), arg1=np.zeros((4, 3), np.float32),
             arg2=np.zeros((4, 3), np.float32))
    code, _, err = run(capsys, "run", SEED_HLO, "--inputs", str(p))
    assert code == 2 and "argument 0" in err and "(2, 2)" in err


def test_console_script_exit_status():
    proc = subprocess.run([sys.executable, "-m", "xlapy.tools.cli", "run", "/nonexistent.hlo"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
