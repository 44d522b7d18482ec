"""Optional dependencies: imported where a feature needs them, with an error that
names the feature and the extra that installs them when they are missing."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, feature: str, extra: str) -> ModuleType:
    """``import module`` for `feature`; when it is not installed, ModuleNotFoundError
    (an ImportError, as the bare import raised) saying which extra brings it. A module
    that is installed but misses one of its own dependencies keeps its own error."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        top = module.split(".")[0]
        if error.name != top and not (error.name == module and _not_installed(top)):
            raise
        raise ModuleNotFoundError(
            f"{feature} needs {top}, which is not installed: pip install 'h5turbo[{extra}]'",
            name=error.name,
        ) from None


def _not_installed(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as error:
        return error.name == module
    return False
