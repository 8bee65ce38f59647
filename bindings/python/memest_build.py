"""How memest._native is built, shared by the two setup.py files that build the package: the
repository root's (python3 -m pip install --no-build-isolation .) and bindings/python's
(python3 -m pip install --no-build-isolation bindings/python). Not part of the installed package.

libmemest is compiled by the project's own CMake (static, so the embedded presets are generated
exactly as for every other front end), then linked into the pybind11 bridge src/native.cpp.
Offline: needs cmake, a C++17 compiler, nlohmann-json3-dev and Debian's python3-pybind11 (a
Python without pybind11 is told what to install: PYBIND11_MISSING).
MEMEST_CMAKE_BUILD_DIR=<dir> reuses (or creates) that CMake build directory for the library.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

from setuptools import setup

# Said instead of "No module named 'pybind11'" when the Python running the build lacks it.
PYBIND11_MISSING = (
    "memest's Python build needs pybind11 (>= 2.6), which this Python ({python}, {version}) "
    "cannot import. Install it for this Python: on Debian or Ubuntu (/usr/bin/python3) "
    "`apt-get install python3-pybind11`, elsewhere `{python} -m pip install pybind11`. Or let pip "
    "fetch it: pyproject.toml's [build-system] requires pybind11, so `pip install "
    "./bindings/python` without --no-build-isolation builds in an isolated environment that has "
    "it (that needs access to PyPI)."
)

try:
    from pybind11.setup_helpers import Pybind11Extension, build_ext
except ImportError as error:
    raise ModuleNotFoundError(
        PYBIND11_MISSING.format(python=sys.executable or "python3", version=sys.version.split()[0]),
        name="pybind11",
    ) from error

HERE = Path(__file__).resolve().parent   # bindings/python
ROOT = HERE.parent.parent                # the memest checkout: CMakeLists.txt, libmemest/
HEADER = ROOT / "libmemest" / "include" / "memest" / "memest.h"


def library_version() -> str:
    text = HEADER.read_text()
    return re.search(r'#define MEMEST_VERSION_STRING "([^"]+)"', text).group(1)


class BuildWithCMake(build_ext):
    """Builds the static library with CMake first, then links the extension against it."""

    def build_extensions(self):
        build_dir = Path(os.environ.get("MEMEST_CMAKE_BUILD_DIR") or (Path(self.build_temp) / "libmemest"))
        build_dir = build_dir.resolve()
        if not (build_dir / "CMakeCache.txt").exists():
            subprocess.check_call([
                "cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                "-DMEMEST_BUILD_TESTS=OFF", "-DMEMEST_BUILD_CLI=OFF",
            ])
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "memest_static",
                               "-j", jobs])
        static = build_dir / "libmemest" / "libmemest.a"
        if not static.exists():
            raise RuntimeError(f"CMake did not produce {static}")
        for ext in self.extensions:
            ext.extra_objects.append(str(static))
            # libmemest.a's one library dependency: yaml-cpp (launch-file import), from
            # Debian's libyaml-cpp-dev, as memest.pc's Requires.private says
            ext.libraries.append("yaml-cpp")
        super().build_extensions()


def setup_memest(setup_dir: Path, **options) -> None:
    """setup() for the package, from a setup.py in `setup_dir` (the root or bindings/python):
    the paths setuptools is given are relative to it, as it wants them."""
    pkg = os.path.relpath(HERE, setup_dir)
    prefix = "" if pkg == "." else pkg + "/"
    setup(
        version=library_version(),
        packages=["memest"],
        package_dir={"memest": f"{prefix}memest"},
        package_data={"memest": ["py.typed", "*.pyi"]},
        ext_modules=[
            Pybind11Extension(
                "memest._native",
                [f"{prefix}src/native.cpp"],
                include_dirs=[str(ROOT / "libmemest" / "include")],
                define_macros=[("MEMEST_STATIC", "1")],
                cxx_std=17,
            )
        ],
        cmdclass={"build_ext": BuildWithCMake},
        zip_safe=False,
        **options,
    )
