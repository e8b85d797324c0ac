"""The package list, found rather than written by hand: every folder with an __init__.py under
core/, app/ and resources/, installed as specscope.core, specscope.app and specscope.resources
(pyproject.toml's package-dir). setuptools' own discovery ([tool.setuptools.packages.find])
names packages after their folders and cannot put them under that prefix; the rest of the
configuration is in pyproject.toml."""
from setuptools import find_packages, setup

FOLDERS = ("core", "app", "resources")

setup(packages=[f"specscope.{name}" for name in find_packages(include=[f"{f}{s}" for f in FOLDERS
                                                                      for s in ("", ".*")])])
