"""The README's Python worker-pool example runs and prints what it says."""

import os
import re
import subprocess
import sys

from conftest import ROOT, remove_quietly, unique_name


def test_the_worker_pool_example_counts_exactly():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    section = readme.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    name = unique_name("readme")
    assert code.count('"jobs"') == 2
    code = code.replace('"jobs"', repr(name))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                             capture_output=True, text=True, timeout=120).stdout
        assert out.strip() == "8000"
    finally:
        remove_quietly(name)
