"""Packaging hunt: what a newcomer meets after `pip install .` (the `formats` extra's
oldest anndata, the demo, the typing a package with a .pyi stub promises).

Each test compares to a reference where one exists (anndata's own reader, h5py through
the demo's own check) and runs offline in a few seconds.
"""

import ast
import builtins
import importlib
from pathlib import Path

import pytest

import h5turbo

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "corpus"
PACKAGE = Path(h5turbo.__file__).resolve().parent


def test_read_h5ad_sparse_under_anndata_without_settings(monkeypatch):
    anndata = pytest.importorskip("anndata")
    sparse = pytest.importorskip("scipy.sparse")
    path = CORPUS / "h5ad" / "anndata_v0.7.0.h5ad"
    reference = anndata.read_h5ad(path)
    assert sparse.issparse(reference.X)
    # anndata 0.9 and 0.10 (what `pip install 'h5turbo[formats]'` may install) have no
    # anndata.settings; the reader must not need it.
    monkeypatch.delattr(anndata, "settings", raising=True)
    got = h5turbo.read_h5ad(path)
    assert got.shape == reference.shape
    assert sparse.issparse(got.X)
    assert (got.X != reference.X).nnz == 0


def test_demo_smaller_than_one_chunk(tmp_path, capsys):
    pytest.importorskip("h5py")
    demo = importlib.import_module("h5turbo.demo")
    # the demo compares h5turbo's read with h5py's and returns 0 when they agree
    rc = demo.main(["--rows", "100", "--cols", "300", "--dir", str(tmp_path), "--repeats", "1"])
    assert rc == 0
    assert "results identical: yes" in capsys.readouterr().out
    assert not list(tmp_path.glob("*.partial"))


def test_package_has_py_typed():
    assert (PACKAGE / "_native.pyi").is_file()
    assert (PACKAGE / "py.typed").is_file()


def _annotation_roots(tree):
    """The first name of every name used in an annotation, string annotations included."""
    def roots(node):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                yield from roots(ast.parse(sub.value, mode="eval"))
            elif isinstance(sub, ast.Name):
                yield sub.id

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if arg is not None and arg.annotation is not None:
                    yield from roots(arg.annotation)
            if node.returns is not None:
                yield from roots(node.returns)
        elif isinstance(node, ast.AnnAssign):
            yield from roots(node.annotation)


def test_native_stub_annotations_name_defined_things():
    tree = ast.parse((PACKAGE / "_native.pyi").read_text())
    defined = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            defined.update(a.asname or a.name for a in node.names)
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
    undefined = sorted(set(_annotation_roots(tree)) - defined)
    assert undefined == []


def test_licence_texts_exist():
    texts = [p.name for p in REPO.iterdir() if p.name.upper().startswith(("LICENSE", "LICENCE", "COPYING"))]
    assert any("MIT" in t.upper() for t in texts) or len(texts) >= 2, texts


def test_cli_repack_without_h5py_names_the_extra(tmp_path, monkeypatch, capsys):
    from h5turbo import cli

    src = CORPUS / "10x" / "10x_data_3.0.0_filtered_feature_bc_matrix.h5"
    monkeypatch.setitem(__import__("sys").modules, "h5py", None)  # import h5py -> ImportError
    rc = cli.main(["repack", str(src), str(tmp_path / "out.h5")])
    assert rc == 1
    assert "pip install" in capsys.readouterr().err
    # the same situation for bench, as it is handled there
    assert cli.main(["bench", "--preset", "quick"]) == 1
    assert "pip install" in capsys.readouterr().err
