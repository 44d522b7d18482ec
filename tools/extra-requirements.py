"""Print the requirements of one optional extra of the installed h5turbo, one a line.

    python tools/extra-requirements.py test

Read from the package metadata (what `pip install -e '.[test]'` installed), so the
list in pyproject.toml stays the only one.
"""

import re
import sys
from importlib.metadata import requires


def extra_requirements(extra: str) -> list[str]:
    marker = re.compile(r"""extra\s*==\s*["']""" + re.escape(extra) + r"""["']""")
    found = []
    for requirement in requires("h5turbo") or []:
        spec, _, condition = requirement.partition(";")
        if marker.search(condition):
            found.append(spec.strip())
    return found


if __name__ == "__main__":
    print("\n".join(extra_requirements(sys.argv[1])))
