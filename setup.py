"""Builds the memest Python package from a plain checkout:

    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation --no-index .

The package lives in bindings/python/ (see its README); the build (libmemest with CMake, then
the pybind11 bridge) is bindings/python/memest_build.py, shared with bindings/python/setup.py.
Build outputs go to build-python/ and memest.egg-info/ (both git-ignored)."""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "bindings" / "python"))

from memest_build import setup_memest  # noqa: E402

setup_memest(HERE, options={"build": {"build_base": "build-python"}})
