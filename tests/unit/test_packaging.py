"""Installing the project prints nothing but pip's own lines.

setuptools reads `pyproject.toml` on every install (`scripts/run`, `scripts/test`, the
Docker build); a field in a deprecated form makes it print a boxed warning each time.
The test suite turns warnings into errors, so reading the file here fails on one.
"""

from __future__ import annotations

from pathlib import Path

from setuptools.config.pyprojecttoml import apply_configuration
from setuptools.dist import Distribution

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_pyproject_reads_without_deprecation_warnings() -> None:
    dist = apply_configuration(Distribution(), PYPROJECT)

    assert dist.metadata.license_expression == "Apache-2.0"
