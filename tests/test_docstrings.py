"""Every docstring example in the library runs and prints what it shows (under each backend)."""

import doctest
import importlib
import pathlib
import pkgutil

import pytest

import keras_rnmt

PACKAGE = pathlib.Path(keras_rnmt.__file__).parent


def _modules_with_examples():
    names = []
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="keras_rnmt."):
        path = PACKAGE.joinpath(*info.name.split(".")[1:])
        source = path / "__init__.py" if info.ispkg else path.with_suffix(".py")
        if ">>> " in source.read_text(encoding="utf-8"):
            names.append(info.name)
    return sorted(names)


MODULES = _modules_with_examples()


def test_the_library_has_docstring_examples_to_check():
    # Guards the discovery above: an empty list would make the test below pass vacuously.
    assert {"keras_rnmt.search.beam", "keras_rnmt.models.translation_model"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
