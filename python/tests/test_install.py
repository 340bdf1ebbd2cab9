"""pip install ./python works offline in a venv (Debian's setuptools, no
build isolation, no index), and the installed module needs no libshmkv.so:
the library is compiled into the extension. The venv and a copy of the
sources (include/, src/, python/) live under $BUILD."""

import os
import shutil
import subprocess
import sys

from conftest import BUILD, ROOT

PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")


def _copy_sources(dst):
    ignore = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".pytest_cache")
    for part in ("include", "src", "python"):
        shutil.copytree(os.path.join(ROOT, part), os.path.join(dst, part), ignore=ignore)


def test_pip_install_into_a_venv_then_import():
    work = os.path.join(BUILD, "python-install-test-%d" % os.getpid())
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        src = os.path.join(work, "checkout")
        _copy_sources(src)
        venv = os.path.join(work, "venv")
        subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", venv], check=True)
        vpy = os.path.join(venv, "bin", "python")
        env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        env.pop("PYTHONPATH", None)
        subprocess.run(
            [vpy, "-m", "pip", "install", "-q", "--no-build-isolation", "./python"],
            cwd=src, env=env, check=True)
        probe = (
            "import os, shmkv, shmkv._shmkv as c\n"
            "print(c.__file__)\n"
            "n = '/shmkv-py-install-%d' % os.getpid()\n"
            "with shmkv.Store.create(n, slots=64) as st:\n"
            "    st.set('k', 'v'); assert st.get('k') == b'v'\n"
            "    with st.lock('l') as g: assert g.token == 1\n"
            "    st.remove()\n"
            "d = os.path.dirname(shmkv.__file__)\n"
            "assert os.path.exists(os.path.join(d, 'py.typed'))\n"
            "assert os.path.exists(os.path.join(d, '__init__.pyi'))\n"
        )
        out = subprocess.run([vpy, "-c", probe], cwd=work, env=env, check=True,
                             capture_output=True, text=True).stdout.strip()
        assert out.startswith(os.path.join(venv, "lib")), out
        # no run-time dependency on the shared library
        dyn = subprocess.run(["readelf", "-d", out], check=True, capture_output=True,
                             text=True).stdout
        assert "libshmkv" not in dyn
        # the command tests pass on the installed module too
        subprocess.run(
            [vpy, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             os.path.join(ROOT, "python", "tests", "test_commands.py")],
            cwd=work, env=dict(env, SHMKV_TEST_INSTALLED="1"), check=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
