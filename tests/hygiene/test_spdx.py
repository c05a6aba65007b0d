# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Every Python, C++ and shell source carries the SPDX header (``scripts/spdx.py``; LICENSE:
Apache-2.0).

``nox -s hygiene`` runs this folder; ``hygiene`` is one of nox's default sessions
(``nox.options.sessions`` in noxfile.py), so ``scripts/test.sh`` and CI (``.ci/run``) run it.
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


def test_shell_scripts_are_covered_and_get_the_header_after_the_shebang(tmp_path):
    # the repository's own scripts, with and without the .sh suffix, are checked sources
    covered = {str(p.relative_to(ROOT)) for p in spdx.source_files()}
    assert {"scripts/test.sh", "scripts/bootstrap.sh", ".ci/run"} <= covered
    sh = spdx.with_header("#!/usr/bin/env bash\nset -euo pipefail\n", ".sh")
    assert sh.splitlines() == ["#!/usr/bin/env bash", "# SPDX-License-Identifier: Apache-2.0",
                               f"# {spdx.COPYRIGHT}", "set -euo pipefail"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "run").write_text("#!/bin/sh\necho hi\n")        # shell by its shebang
    (tmp_path / "tool.sh").write_text("echo hi\n")                # shell by its suffix
    (tmp_path / "notes").write_text("#!not a shell\n")            # neither: not a source
    (tmp_path / "ok.sh").write_text("#!/bin/bash\n# SPDX-License-Identifier: Apache-2.0\n")
    assert [p.name for p in spdx.missing(tmp_path)] == ["run", "tool.sh"]
    run = tmp_path / "run"
    assert spdx.kind(run) == ".sh" and spdx.kind(tmp_path / "notes") is None
    assert spdx.with_header(run.read_text(), spdx.kind(run)).startswith(
        "#!/bin/sh\n# SPDX-License-Identifier: Apache-2.0\n")
