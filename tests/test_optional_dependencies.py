"""A missing optional dependency is named with the extra that installs it."""

import subprocess
import sys

import pytest

# each: the modules hidden, then the call that needs them, run in a fresh interpreter
CASES = [
    (["anndata"], "h5turbo.read_h5ad(path)", "h5turbo.read_h5ad needs anndata", "formats"),
    (["anndata"], "h5turbo.read_10x_h5(path)", "h5turbo.read_10x_h5 needs anndata", "formats"),
    (["anndata"], "h5turbo.read_loom(path)", "h5turbo.read_loom needs anndata", "formats"),
    (["dask", "dask.array"], "h5turbo.File(path)['x'].to_dask()", "Dataset.to_dask needs dask", "dask"),
    (["scipy", "scipy.sparse"], "h5turbo.File(path)['m'].to_scipy()", "reading a sparse matrix needs scipy", "sparse"),
]

SCRIPT = """
import sys
for name in {hidden!r}:
    sys.modules[name] = None  # as if not installed
import h5turbo
path = {path!r}
try:
    {call}
except ModuleNotFoundError as error:
    print("MISSING", error.name, "|", error)
"""


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    h5py = pytest.importorskip("h5py")
    import numpy as np

    path = tmp_path_factory.mktemp("optional") / "sample.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(10)
        m = f.create_group("m")
        m.attrs["encoding-type"] = "csr_matrix"
        m.attrs["encoding-version"] = "0.1.0"
        m.attrs["shape"] = (2, 3)
        m["data"] = np.array([1.0, 2.0])
        m["indices"] = np.array([0, 2])
        m["indptr"] = np.array([0, 1, 2])
    return str(path)


@pytest.mark.parametrize("hidden, call, message, extra", CASES)
def test_missing_dependency_names_the_extra(sample, hidden, call, message, extra):
    code = SCRIPT.format(hidden=hidden, path=sample, call=call)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "MISSING" in done.stdout, done.stdout
    assert message in done.stdout and f"pip install 'h5turbo[{extra}]'" in done.stdout, done.stdout
    assert f"MISSING {hidden[-1]} " in done.stdout or f"MISSING {hidden[0]} " in done.stdout


def test_a_dependency_of_the_optional_module_keeps_its_own_error(monkeypatch):
    """An installed module that lacks one of its own imports is not 'not installed'."""
    from h5turbo._optional import require

    monkeypatch.setitem(sys.modules, "h5turbo_test_broken", None)
    with pytest.raises(ModuleNotFoundError, match="needs h5turbo_test_broken"):
        require("h5turbo_test_broken", "a feature", "extra")
    with pytest.raises(ModuleNotFoundError) as caught:
        require("json.h5turbo_no_such_submodule_of_json", "a feature", "extra")
    assert "needs" not in str(caught.value)  # json is installed: its own error
