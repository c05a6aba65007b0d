# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""nox sessions for the vllm-ascend monorepo.

Sessions
    tests(<folder>)  one per ``packages/<folder>`` (tag ``<folder>``): that package's own tests with
                     only that package, its declared sibling layers and its test deps visible.
                     ``nox -s "tests(ascend-ops)"`` and ``nox -t ascend-ops`` are the same run.
    e2e              ``tests/e2e``: real vLLM + the whole plugin vs HF transformers on SmolLM2
                     (CPU emulation; the simulated-NPU tests run in ``npu_coverage``). Without
                     arguments, in ``E2E_PARTS`` pytest processes over consecutive test files,
                     ``VLLM_ASCEND_E2E_JOBS`` (default 2) of them at once.
    npu_coverage     the simulated-NPU tests (the ascend-ops test files that use the simulated
                     NPU, ``tests/e2e/test_simulated_npu*.py``) under the adversarial schedule
                     (``ASCEND_OPS_SIM_SCHEDULE``), then every torch_npu / torch.npu
                     call site in the source against the sites they executed; 100 % required.
    release          build a wheel + sdist of all seven distributions into ``dist/wheelhouse``
                     (portable ``ascend_ops._C``), ``twine check`` them, then ``tests/release``:
                     fresh venvs installing from that folder only (docs/releasing.md).
    lint             ruff over the repo (pyproject's [tool.ruff]: E501 at 120 columns).
    hygiene          tests/hygiene (SPDX headers, scripts/spdx.py).
    typecheck        mypy over every package's src/ at the strictness stated in pyproject's
                     [tool.mypy] (stricter than mypy's default: docs/architecture.md, "Type checking"),
                     then stubtest of ascend_ops/_C.pyi against the compiled ascend_ops._C.
    demo             README command (a): serve SmolLM2 in emulation and ask it a question.
Default (``nox`` with no ``-s``): ``lint``, ``hygiene`` and ``typecheck`` (fast, fail first), every
``tests(...)`` session, then ``e2e``, then ``npu_coverage``, then ``release``.

Environments (why they differ)
    Everything here expects ``bash scripts/bootstrap.sh`` to have prepared ``.venv`` (vLLM 0.34.0
    built for the empty target over CPU torch 2.13.0, all our packages editable, test tools);
    ``scripts/test.sh`` does that.

    * ``tests(ascend-ops)`` is a real fresh venv with ``torch==2.13.0+cpu`` alone plus the
      package's ``[test]`` extra and ``ASCEND_OPS_STANDALONE=1``: it proves the op layer needs
      neither vLLM nor any sibling. Installing one torch wheel from the pip cache is cheap.
    * The vLLM-facing layers (all others) need vLLM, torch and ~150 other wheels. A fresh
      install of those per session costs minutes on a 2-core CI box, so these sessions get a
      fresh venv whose site-packages *links* to ``.venv``'s third-party packages and to only the
      allowed layers (the package + its declared siblings, editable installs as they are); every
      other layer of ours, and the meta-package with its vLLM entry points, stays invisible
      (``scripts/venv_overlay.py``). That keeps the layer rule (docs/architecture.md) "tests pass with only its
      declared dependencies" checked at the cost of a venv creation (~5 s), where
      ``venv_backend="none"`` on ``.venv`` would have shown every layer to every test.
    * ``e2e``, ``lint``, ``typecheck`` and ``demo`` run in ``.venv`` itself (``venv_backend="none"``): they want
      the whole product installed, exactly what ``.venv`` is.

pytest exit code 5 ("no tests collected") fails a package session whose ``tests/`` holds test
files; a package without any test file passes with a warning. ``e2e`` always expects tests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nox
import tomllib

ROOT = Path(__file__).resolve().parent
PACKAGES = ROOT / "packages"
VENV = Path(os.environ.get("VLLM_ASCEND_VENV", ROOT / ".venv"))
VENV_PY = VENV / "bin" / "python"
STANDALONE = "ascend-ops"  # the one layer that never sees vLLM

sys.path.insert(0, str(ROOT / "scripts"))
from parallel_parts import jobs_from_env, run_parts, split_by_duration  # noqa: E402
from venv_overlay import overlay  # noqa: E402

nox.options.sessions = ["lint", "hygiene", "typecheck", "tests", "e2e", "npu_coverage", "release"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

COMMON_ENV = {
    "HF_HUB_OFFLINE": "1",  # never reach a model hub
    "HYPOTHESIS_PROFILE": "ci",  # packages register a bounded "ci" profile
    "PYTHONDONTWRITEBYTECODE": "1",
    "OMP_WAIT_POLICY": "PASSIVE",  # spinning OpenMP workers crawl on a busy 2-core box
}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name(req: str) -> str:
    return _norm(re.split(r"[\s<>=!~;\[(@]", req.strip(), maxsplit=1)[0])


def _package_meta() -> dict[str, dict]:
    """folder -> {name, deps, test} read from each ``packages/<folder>/pyproject.toml``."""
    meta = {}
    for pyproject in sorted(PACKAGES.glob("*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        meta[pyproject.parent.name] = {
            "name": _norm(project["name"]),
            "deps": project.get("dependencies", []),
            "test": project.get("optional-dependencies", {}).get("test", []),
        }
    return meta


META = _package_meta()
FOLDER_OF = {m["name"]: folder for folder, m in META.items()}


def _siblings(folder: str) -> list[str]:
    """Folders of ``folder``'s declared sibling layers, transitively (not including itself)."""
    seen: list[str] = []
    todo = [folder]
    while todo:
        for req in META[todo.pop()]["deps"]:
            sib = FOLDER_OF.get(_req_name(req))
            if sib and sib != folder and sib not in seen:
                seen.append(sib)
                todo.append(sib)
    return seen


def _expects_tests(folder: str) -> bool:
    return any((PACKAGES / folder / "tests").rglob("test_*.py"))


def _site_packages(python: str | Path) -> str:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return subprocess.check_output([str(python), "-c", code], text=True).strip()


def _require_prepared_venv(session: nox.Session) -> None:
    if not VENV_PY.exists():
        session.error(f"{VENV} is missing: run `bash scripts/bootstrap.sh` first")


VLLM_DISTS = {"vllm"}
# Run in a session venv with the test extra's vLLM requirements as arguments: each must be
# satisfied by what the overlay shows, and the packages that break CPU torch must be absent.
_CHECK_ENV = """
import sys, importlib.metadata as md
from packaging.requirements import Requirement
bad = []
for name in ("torchvision", "torchaudio", "torchcodec", "torch-npu"):
    try:
        bad.append(f"{name}=={md.version(name)}")
    except md.PackageNotFoundError:
        pass
if bad:
    sys.exit(f"forbidden packages in this session venv: {bad}; delete .nox and rerun")
for text in sys.argv[1:]:
    req = Requirement(text)
    try:
        have = md.version(req.name)
    except md.PackageNotFoundError:
        sys.exit(f"{req} is not in the prepared venv: run scripts/bootstrap.sh")
    if not req.specifier.contains(have, prereleases=True):
        sys.exit(f"{req} wanted but {req.name} {have} is installed")
"""


def _pytest(session: nox.Session, folder: str, python: str) -> None:
    expected = _expects_tests(folder)
    if not expected:
        session.warn(f"packages/{folder}/tests has no test_*.py files: nothing to run")
    session.chdir(PACKAGES / folder)
    session.run(python, "-m", "pytest", "tests", "-m", "not npu", "-p", "no:cacheprovider",
                *session.posargs, env={**COMMON_ENV, **_session_env(folder)},
                success_codes=[0] if expected else [0, 5], external=True)


def _session_env(folder: str) -> dict[str, str]:
    return {"ASCEND_OPS_STANDALONE": "1"} if folder == STANDALONE else {}


# The one-core sessions run as two lanes at once in scripts/test.sh, one `nox -t <lane>` process
# per core. The split is static, dealt once by what each session took alone in a clean-clone
# run (docs/testing.md): lane-1 holds the sessions named here (~160 s with their venvs), lane-2
# every other one-core session (~190 s), a new package's tests(...) included.
LANE_1_SESSIONS = {"tests(ascend-platform)", "tests(ascend-attention)", "lint"}


def _lane(session_name: str) -> str:
    return "lane-1" if session_name in LANE_1_SESSIONS else "lane-2"


@nox.session
@nox.parametrize("folder", [nox.param(f, id=f, tags=[f, _lane(f"tests({f})")]) for f in META])
def tests(session: nox.Session, folder: str) -> None:
    """One package's own tests with only its declared dependencies installed."""
    pkg = PACKAGES / folder
    if folder == STANDALONE:
        session.install("-r", str(ROOT / "requirements" / "ops-standalone.txt"))
        session.install(f"{pkg}[test]")
        _pytest(session, folder, "python")
        return
    _require_prepared_venv(session)
    allowed = [META[folder]["name"]] + [META[s]["name"] for s in _siblings(folder)]
    target = session.run("python", "-c",
                         "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                         silent=True).strip().splitlines()[-1]
    hidden = overlay(_site_packages(VENV_PY), target, allowed)
    session.log(f"visible layers: {allowed}; hidden: {hidden}")
    # vLLM comes from the overlay: pip installing a `vllm` requirement here would fetch PyPI's
    # build (CUDA torch 2.14 and its libraries) instead of the empty-target build .venv has
    # (docs/architecture.md, "Environment facts"); the requirement is only checked against it.
    vllm_reqs = [r for r in META[folder]["test"] if _req_name(r) in VLLM_DISTS]
    other = [r for r in META[folder]["test"] if _req_name(r) not in VLLM_DISTS]
    if other:
        session.install(*other)
    session.run("python", "-c", _CHECK_ENV, *vllm_reqs, silent=False)
    _pytest(session, folder, "python")


@nox.session(venv_backend="none")
def e2e(session: nox.Session) -> None:
    """End-to-end: vLLM + plugin (emulation) vs HF transformers on SmolLM2-135M-Instruct."""
    _require_prepared_venv(session)
    env = {**COMMON_ENV, "VLLM_ASCEND_EMULATE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
           "VLLM_TARGET_DEVICE": None}  # None: removed (it would bypass platform plugins)
    # Arguments after `--` go to pytest; without a path among them, run all of tests/e2e.
    has_path = any(not a.startswith("-") and Path(a).exists() for a in session.posargs)
    targets = [] if has_path else [str(ROOT / "tests" / "e2e")]
    # the simulated-NPU e2e tests run (once) in npu_coverage, which also collects their call sites
    skip_sim = [] if has_path else ["--ignore-glob", str(ROOT / "tests" / "e2e" / SIM_E2E_GLOB)]
    # The full run (no arguments) is split into E2E_PARTS pytest processes over the test files,
    # dealt by recorded duration (tests/e2e/durations.json; longest part first): each process
    # keeps what its engines leave behind (>8 GiB RSS over all of tests/e2e, on a 24 GiB box); a
    # new process costs ~10 s of imports. Every part runs; failures at the end.
    # VLLM_ASCEND_E2E_JOBS parts run at once (default 2; 1 = one after another): much of a part's
    # wall time is one-core work (imports, weight loading, graph compilation, child processes).
    # --durations: the slowest tests in CI's log, to keep the run inside its time budget.
    pytest_args = ["-p", "no:cacheprovider", "-v", "--timeout=1800", "--durations=30"]
    if session.posargs:
        session.run(str(VENV_PY), "-m", "pytest", *targets, *skip_sim, *pytest_args,
                    *session.posargs, env=env, external=True)
        return
    files = sorted(str(p) for p in (ROOT / "tests" / "e2e").rglob("test_*.py")
                   if not p.match(SIM_E2E_GLOB))
    # parts of about equal recorded duration, longest first (refresh: scripts/parallel_parts.py)
    durations = json.loads((ROOT / "tests" / "e2e" / "durations.json").read_text())
    # the modules that share conftest's module-spanning engine stay in one part (built once)
    sharing = [Path(f).name for f in files if "default_llm" in Path(f).read_text()]
    parts = split_by_duration(files, durations, E2E_PARTS, together=sharing)
    # caches every part reads (the converted SmolLM2) are made once, before the parts race for them
    session.run(str(VENV_PY), "-c", "from vllm_ascend import demo_model; demo_model.prepare()",
                env=env, external=True)
    # platform tests that need the meta-package's entry points (skipped in its own session): one
    # more, short command in the same pool, last, where it fills the other lane's tail
    meta_tests = [str(VENV_PY), "-m", "pytest", str(ROOT / "packages" / "ascend-platform" / "tests"),
                  "-m", "requires_meta", "-p", "no:cacheprovider", "-q"]
    _pytest_parts(session, "e2e", parts, pytest_args, env, ROOT / ".nox" / "e2e-parts",
                  extra=[meta_tests])


def _pytest_parts(session: nox.Session, label: str, parts: list[list[str]], pytest_args: list[str],
                  env: dict, logs: Path, extra: list[list[str]] = ()) -> None:
    """Run each part (a list of test files) as its own pytest process, VLLM_ASCEND_E2E_JOBS of
    them at once (default 2), each with its log and JUnit report (``logs/part-N.*``; the
    reports feed ``scripts/parallel_parts.py --update``), then the ``extra`` commands (no
    report) in the same pool. Every part runs; failures at the end."""
    for stale in logs.glob("part-*.xml"):  # a report per part of this run only
        stale.unlink()
    jobs = jobs_from_env("VLLM_ASCEND_E2E_JOBS", 2)
    full_env = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    # The cores are shared out between the parts that run at once (unless OMP_NUM_THREADS is
    # set): two parts of two OpenMP threads each on two cores made every parallel region wait for
    # a descheduled thread (one file measured 117 s -> 103 s, two copies at once, with 1 thread).
    full_env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // jobs)))
    commands = [[str(VENV_PY), "-m", "pytest", *part, *pytest_args,
                 f"--junitxml={logs / f'part-{n}.xml'}"] for n, part in enumerate(parts, 1)]
    codes = run_parts(commands + [list(c) for c in extra], logs, full_env, jobs)
    failed = [n for n, rc in enumerate(codes, 1) if rc != 0]
    if failed:
        session.error(f"{label} part(s) {failed} of {len(codes)} failed (see their logs above)")


E2E_PARTS = 6


SIM_E2E_GLOB = "test_simulated_npu*.py"
SIM_E2E_PARTS = 2
CALLSITES_ENV = "ASCEND_OPS_SIM_CALLSITES_DIR"


@nox.session(venv_backend="none")
def npu_coverage(session: nox.Session) -> None:
    """Simulated-NPU tests, then the NPU call-site coverage check (docs/simulated-npu.md).

    Each simulated process (the ascend-ops simulator tests' pytest process, every engine and TP
    worker process of the e2e tests) writes the simulator's ``call_sites()`` into a fresh folder
    (``ASCEND_OPS_SIM_CALLSITES_DIR``); ``scripts/npu_coverage.py`` compares their union with
    ``ascend_ops.simulator.static_call_sites`` and fails listing every site no test executed.
    Arguments after ``--`` go to the e2e pytest run.
    """
    import shutil

    _require_prepared_venv(session)
    dump = ROOT / ".nox" / "npu_callsites"
    shutil.rmtree(dump, ignore_errors=True)
    dump.mkdir(parents=True)
    # the asynchronous simulated device's race-exposing schedule (docs/simulated-npu.md)
    env = {**COMMON_ENV, CALLSITES_ENV: str(dump), "VLLM_TARGET_DEVICE": None,
           "PYTHONPATH": str(ROOT / "scripts"), "ASCEND_OPS_SIM_SCHEDULE": "adversarial"}
    # the ascend-ops test files that run ops on the simulated NPU (its ``simulated_npu`` fixture)
    sim_tests = [p for p in sorted((PACKAGES / "ascend-ops" / "tests").glob("test_*.py"))
                 if "simulated_npu" in p.read_text() or p.name.startswith("test_simulator")]
    if sim_tests:
        session.run(str(VENV_PY), "-m", "pytest", *map(str, sim_tests), "-p", "no:cacheprovider",
                    "-p", "npu_callsites_plugin", "-q", env=env, external=True)
    else:
        session.warn("packages/ascend-ops/tests has no simulated-NPU test files")
    sim_files = sorted(map(str, (ROOT / "tests" / "e2e").glob(SIM_E2E_GLOB)))
    sim_env = {**env, "VLLM_ASCEND_EMULATE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    pytest_args = ["-p", "no:cacheprovider", "-v", "--timeout=1800", "--durations=15"]
    if session.posargs:
        session.run(str(VENV_PY), "-m", "pytest", *sim_files, *pytest_args, *session.posargs,
                    env=sim_env, external=True)
    else:
        # two parts at once, dealt by recorded duration like e2e's: each test's engine runs in a
        # child process that the pytest process mostly waits on
        durations = json.loads((ROOT / "tests" / "e2e" / "durations.json").read_text())
        parts = split_by_duration(sim_files, durations, SIM_E2E_PARTS)
        _pytest_parts(session, "simulated-NPU e2e", parts, pytest_args, sim_env,
                      ROOT / ".nox" / "npu-coverage-parts")
    session.run(str(VENV_PY), str(ROOT / "scripts" / "npu_coverage.py"), str(dump), env=env,
                external=True)


WHEELHOUSE = ROOT / "dist" / "wheelhouse"


@nox.session(venv_backend="none")
def release(session: nox.Session) -> None:
    """Wheels + sdists of every distribution into dist/wheelhouse, checked and install-tested.

    Builds with ``.venv``'s build backends (``tests/release/wheelhouse.py``; ``-- --isolated``
    for PEP 517 isolated builds), runs ``twine check --strict`` on every file, then
    ``tests/release`` with ``VLLM_ASCEND_WHEELHOUSE`` pointing at the folder. Other arguments
    after ``--`` go to pytest.
    """
    _require_prepared_venv(session)
    isolated = "--isolated" in session.posargs
    pytest_args = [a for a in session.posargs if a != "--isolated"]
    session.run(str(VENV_PY), str(ROOT / "tests" / "release" / "wheelhouse.py"),
                "--out", str(WHEELHOUSE), *(["--isolated"] if isolated else []), external=True)
    files = sorted(str(f) for f in WHEELHOUSE.iterdir() if f.is_file())
    session.run(str(VENV_PY), "-m", "twine", "check", "--strict", *files, external=True)
    env = {**COMMON_ENV, "VLLM_ASCEND_WHEELHOUSE": str(WHEELHOUSE), "VLLM_TARGET_DEVICE": None}
    session.run(str(VENV_PY), "-m", "pytest", str(ROOT / "tests" / "release"),
                "-p", "no:cacheprovider", "-v", "--timeout=900", *pytest_args, env=env,
                external=True)


@nox.session(venv_backend="none", tags=[_lane("lint")])
def lint(session: nox.Session) -> None:
    """ruff over every Python file of the repo."""
    _require_prepared_venv(session)
    session.run(str(VENV_PY), "-m", "ruff", "check", str(ROOT), *session.posargs,
                external=True)


@nox.session(venv_backend="none", tags=[_lane("hygiene")])
def hygiene(session: nox.Session) -> None:
    """Repository hygiene checks (``tests/hygiene``): the SPDX header on every source."""
    _require_prepared_venv(session)
    session.run(str(VENV_PY), "-m", "pytest", str(ROOT / "tests" / "hygiene"), "-p",
                "no:cacheprovider", "-q", *session.posargs, external=True)


@nox.session(venv_backend="none", tags=[_lane("typecheck")])
def typecheck(session: nox.Session) -> None:
    """mypy over ``packages/*/src`` and ``src`` with the config in pyproject.toml ([tool.mypy]),
    then mypy's stubtest of ``ascend_ops/_C.pyi`` against the compiled ``ascend_ops._C`` (every
    function, its positional arguments and its return type)."""
    _require_prepared_venv(session)
    session.chdir(ROOT)
    session.run(str(VENV_PY), "-m", "mypy", *session.posargs, external=True)
    session.run(str(VENV_PY), "-m", "mypy.stubtest", "ascend_ops._C", external=True)


@nox.session(venv_backend="none")
def demo(session: nox.Session) -> None:
    """README command (a) without the bootstrap step: serve SmolLM2 and ask it a question."""
    _require_prepared_venv(session)
    session.run("bash", str(ROOT / "scripts" / "demo.sh"), "--no-bootstrap", *session.posargs,
                external=True)
