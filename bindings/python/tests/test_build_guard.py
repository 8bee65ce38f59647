"""The package's build (memest_build.py) under a Python without pybind11: it says what to
install instead of "No module named 'pybind11'". pybind11 is hidden from a child Python by a
finder that refuses it; the build is entered as pip enters it, through setup.py (both the
bindings/python one and the repository root's)."""
import subprocess
import sys
from pathlib import Path

import pytest

BINDINGS = Path(__file__).resolve().parent.parent   # bindings/python
ROOT = BINDINGS.parent.parent

# Runs a setup.py (argv[1]) as `setup.py --version` with pybind11 unimportable.
HIDE_PYBIND11 = """
import importlib.abc, runpy, sys

class NoPybind11(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pybind11" or name.startswith("pybind11."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoPybind11())
for name in [m for m in sys.modules if m == "pybind11" or m.startswith("pybind11.")]:
    del sys.modules[name]
setup_py = sys.argv[1]
sys.argv = [setup_py, "--version"]
runpy.run_path(setup_py, run_name="__main__")
"""


def run_setup(setup_py: Path, hide: bool):
    code = HIDE_PYBIND11 if hide else HIDE_PYBIND11.replace("sys.meta_path.insert(0, NoPybind11())", "")
    return subprocess.run([sys.executable, "-c", code, str(setup_py)], cwd=setup_py.parent,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("setup_py", [BINDINGS / "setup.py", ROOT / "setup.py"], ids=["bindings", "root"])
def test_missing_pybind11_says_what_to_install(setup_py):
    if not setup_py.exists():
        pytest.skip(f"no {setup_py} (the package was not built from a checkout)")
    done = run_setup(setup_py, hide=True)
    assert done.returncode != 0, done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: memest's Python build needs pybind11"), done.stderr
    assert "apt-get install python3-pybind11" in last
    assert "-m pip install pybind11" in last
    assert "[build-system] requires pybind11" in last
    assert sys.executable in last, "it names the Python that lacks it"


def test_with_pybind11_the_build_goes_on():
    """The same child Python, pybind11 not hidden: setup.py reads the version (the guard is
    not in the way of Debian's offline build)."""
    pytest.importorskip("pybind11")
    done = run_setup(BINDINGS / "setup.py", hide=False)
    assert done.returncode == 0, done.stderr
    header = (ROOT / "libmemest" / "include" / "memest" / "memest.h").read_text()
    assert f'"{done.stdout.strip().splitlines()[-1]}"' in header, done.stdout
