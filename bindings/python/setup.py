"""Builds memest from this directory: python3 -m pip install --no-build-isolation bindings/python
(the repository root's setup.py builds the same package: python3 -m pip install
--no-build-isolation .). The build itself is in memest_build.py."""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from memest_build import setup_memest  # noqa: E402

setup_memest(HERE)
