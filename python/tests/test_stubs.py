"""The type stubs (shmkv/__init__.pyi) and the docstrings cover the whole
module: every public name, every method of every class."""

import ast
import os

import shmkv

STUB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "shmkv", "__init__.pyi")


def _stub():
    with open(STUB) as f:
        tree = ast.parse(f.read())
    names, classes = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
            classes[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets)
    return names, classes


def _public(obj):
    return {n for n in dir(obj) if not n.startswith("_") or n in (
        "__enter__", "__exit__", "__getitem__", "__setitem__", "__delitem__",
        "__contains__", "__len__", "__iter__", "__next__")}


def test_every_public_name_is_in_the_stub():
    names, _ = _stub()
    missing = {n for n in dir(shmkv) if not n.startswith("_")} - names
    assert not missing
    assert "__version__" in names


def test_every_method_is_in_the_stub_and_documented():
    _, classes = _stub()
    for cls in (shmkv.Store, shmkv.Lock, shmkv.Grant, shmkv.PatternLock, shmkv.ScanIterator):
        own = {n for n in _public(cls) if n in cls.__dict__}
        missing = own - classes[cls.__name__]
        assert not missing, (cls.__name__, missing)
        assert cls.__doc__
        for n in own:
            if n.startswith("_"):
                continue
            doc = getattr(cls, n).__doc__
            assert doc and len(doc) > 10, (cls.__name__, n)


def test_signatures_are_introspectable():
    import inspect
    sig = inspect.signature(shmkv.Store.set)
    assert list(sig.parameters)[:3] == ["self", "name", "value"]
    assert "get" in sig.parameters and "keepttl" in sig.parameters
    assert "timeout" in inspect.signature(shmkv.Store.lock).parameters
