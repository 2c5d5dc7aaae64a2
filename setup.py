"""Package discovery, the one thing pyproject.toml cannot say: every package under kgnorm/, plus
cli/, ontologies/ and cypher/ installed as kgnorm.cli, kgnorm.ontologies and kgnorm.cypher (the
package-dir mapping in pyproject.toml), never as top-level packages."""
from setuptools import find_packages, setup

MAPPED = ("cli", "ontologies", "cypher")

setup(packages=find_packages(include=["kgnorm", "kgnorm.*"])
      + [f"kgnorm.{p}" for p in find_packages(include=[f"{m}{s}" for m in MAPPED for s in ("", ".*")])])
