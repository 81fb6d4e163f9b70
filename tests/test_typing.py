"""The package type-checks: mypy over ``python/l4sim`` with the project's configuration
(``[tool.mypy]`` in pyproject.toml), as a developer runs it from the source tree.

Skips when mypy is not installed (it is in the ``[test]`` extras) and ``L4SIM_REQUIRE_MYPY``
is unset; CI sets it, so there a missing mypy fails. mypy's cache (``.mypy_cache`` in the
source tree, ignored by git) makes a run after the first take well under a second.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_the_package_type_checks():
    if importlib.util.find_spec("mypy") is None:
        if os.environ.get("L4SIM_REQUIRE_MYPY"):
            pytest.fail("L4SIM_REQUIRE_MYPY is set but mypy is not installed (pip install -e '.[test]')")
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
