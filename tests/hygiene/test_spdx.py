# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Every Python and C++ source carries the SPDX header (``scripts/spdx.py``; LICENSE: Apache-2.0).

``nox -s hygiene`` runs this folder. It is not in nox's default sessions until the header pass
(``python scripts/spdx.py``) has been run over the whole tree; then add ``hygiene`` to
``nox.options.sessions`` in noxfile.py.
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("spdx", ROOT / "scripts" / "spdx.py")
spdx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(spdx)


def test_every_source_has_the_header():
    lacking = [str(p.relative_to(ROOT)) for p in spdx.missing()]
    assert not lacking, (f"{len(lacking)} source file(s) without '{spdx.MARKER}' "
                         f"(run python scripts/spdx.py):\n" + "\n".join(lacking))


def test_header_goes_after_shebang_and_encoding_and_only_once(tmp_path):
    py = "#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\n\"\"\"Doc.\"\"\"\nx = 1\n"
    out = spdx.with_header(py, ".py")
    assert out.splitlines()[:4] == ["#!/usr/bin/env python3", "# -*- coding: utf-8 -*-",
                                    "# SPDX-License-Identifier: Apache-2.0",
                                    f"# {spdx.COPYRIGHT}"]
    assert out.endswith('"""Doc."""\nx = 1\n') and spdx.has_header(out)
    cpp = spdx.with_header("#pragma once\n", ".h")
    assert cpp.startswith("// SPDX-License-Identifier: Apache-2.0\n// Copyright")
    # the script on a scratch repository: adds to the file lacking it, leaves the other alone
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.cpp").write_text("// SPDX-License-Identifier: Apache-2.0\nint x;\n")
    assert [p.name for p in spdx.missing(tmp_path)] == ["a.py"]
