"""Driver plugins: isolation of a broken plugin, strict mode, selection, device strings, and the
probe that lists a device whose kernels cannot build as unusable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_drivers import driver_source, fake_distribution, path_with

import ruda_core as ruda
from ruda_core import Status
from ruda_core.probe import probe_timeout
from ruda_core.runtime.cache import CacheKind, cache_root

PROBE = """
import json, ruda_core as ruda
print(json.dumps({
    "backends": {s.name: [s.status.value, s.reason] for s in ruda.backends()},
    "devices": [str(d) for d in ruda.enumerate_all_devices()],
}))
"""


def _fake_distribution(root: Path, backend: str, module: str, text: str) -> Path:
    """The distribution fake-driver, whose one backend is ``module``."""
    return fake_distribution(root, "fake-driver", {backend: module}, {module: text})


def _run(code: str, path: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **env}
    if path is not None:
        full_env["PYTHONPATH"] = path_with(path)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120
    )


@pytest.fixture
def broken_plugin(tmp_path: Path) -> Path:
    return _fake_distribution(
        tmp_path,
        "broken",
        "ruda_fake_broken_driver",
        "raise ImportError('the vendor library is missing')\n",
    )


def test_broken_plugin_is_a_status_and_others_still_enumerate(broken_plugin):
    result = _run(PROBE, broken_plugin)
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    status, reason = facts["backends"]["broken"]
    assert status == "failed to import"
    assert "fake-driver" in reason and "the vendor library is missing" in reason
    assert facts["backends"]["cpu"][0] == "available"
    assert "cpu" in facts["devices"]


def test_strict_plugins_make_a_broken_plugin_fatal(broken_plugin):
    result = _run(PROBE, broken_plugin, RUDA_STRICT_PLUGINS="1")
    assert result.returncode != 0
    assert "PluginError" in result.stderr and "the vendor library is missing" in result.stderr


def test_a_strict_switch_that_is_neither_0_nor_1_is_refused_naming_it(broken_plugin):
    result = _run(PROBE, broken_plugin, RUDA_STRICT_PLUGINS="false")  # once read as "strict"
    assert result.returncode != 0
    assert "SettingError: RUDA_STRICT_PLUGINS='false' is neither 0" in result.stderr


def test_selected_backend_that_fails_raises_naming_the_variable(broken_plugin):
    result = _run(PROBE, broken_plugin, RUDA_BACKENDS="broken")
    assert result.returncode != 0
    assert "BackendUnavailable: RUDA_BACKENDS selects 'broken', which failed to import: " in (
        result.stderr
    )


def test_a_broken_backend_named_by_a_client_says_it_failed_to_import(broken_plugin):
    code = "import ruda_core as ruda\nruda.client('broken')\n"
    result = _run(code, broken_plugin)
    assert result.returncode != 0
    assert "BackendUnavailable: backend 'broken' failed to import: entry point " in result.stderr
    assert "the vendor library is missing" in result.stderr


def test_a_broken_backend_is_listed_by_ruda_devices_as_failed_to_import(broken_plugin):
    result = _run("from ruda_core.cli import main\nmain(['devices'])\n", broken_plugin)
    assert result.returncode == 0, result.stderr
    line = next(s for s in result.stdout.splitlines() if s.startswith("broken"))
    assert line.startswith("broken — failed to import: entry point broken = ")
    assert line.endswith("ImportError: the vendor library is missing")


def test_each_status_reads_as_english_after_a_backend_name():
    sentences = {s: f"backend 'x' {s.predicate}" for s in Status}
    assert sentences == {
        Status.AVAILABLE: "backend 'x' is available",
        Status.NOT_INSTALLED: "backend 'x' is not installed",
        Status.IMPORT_FAILED: "backend 'x' failed to import",
        Status.NO_DEVICE: "backend 'x' has no device",
        Status.UNUSABLE: "backend 'x' is unusable",
    }


def test_selection_keeps_the_reference_backend(broken_plugin):
    result = _run(PROBE, broken_plugin, RUDA_BACKENDS="cpu")
    facts = json.loads(result.stdout)
    assert set(facts["backends"]) == {"cpu"}


def test_plugin_with_wrong_api_version_is_refused(tmp_path):
    module = (
        "from ruda_core.plugins import BackendInfo, hookimpl\n"
        "from ruda_cpu import CpuRuntime\n"
        "@hookimpl\n"
        "def ruda_backend_info():\n"
        "    return BackendInfo('future', '9.0', 99, CpuRuntime, lambda: [])\n"
    )
    root = _fake_distribution(tmp_path, "future", "ruda_fake_future", module)
    facts = json.loads(_run(PROBE, root).stdout)
    status, reason = facts["backends"]["future"]
    assert status == "failed to import" and "plugin API 99" in reason


def test_driverless_backends_report_a_reason():
    for status in ruda.backends():
        if status.status is not Status.AVAILABLE:
            assert status.reason, f"{status.name} is {status.status.value} without a reason"


def test_unknown_device_string_lists_what_exists():
    with pytest.raises(ValueError, match=r"devices present: .*cpu"):
        ruda.client("tpu:0")
    with pytest.raises(ValueError, match="does not exist; cpu devices present: cpu"):
        ruda.client("cpu:3")
    with pytest.raises(ValueError, match="device index"):
        ruda.client("cpu:x")


def test_importing_ruda_core_imports_no_driver():
    code = (
        "import sys, ruda_core, ruda_core.lang, ruda_core.runtime\n"
        "print(sorted(m for m in ('cupy', 'pyopencl') if m in sys.modules))"
    )
    result = _run(code)
    assert result.stdout.strip() == "[]", result.stderr


NOBUILD = driver_source(
    "nobuild",
    "its compiler fails while NOBUILD_FAIL=1, as PoCL's does on a CPU newer than its LLVM",
    """\
        def _refuse(self):
            if os.environ.get("NOBUILD_FAIL") == "1":
                raise CompilationError(LOG)

        def build(self, compiled):
            self._refuse()
            return super().build(compiled)

        def load_binary(self, compiled, binary):
            self._refuse()
            return super().load_binary(compiled, binary)""",
    version="1.0",
    preamble="""\
import os

from ruda_core.runtime import CompilationError

LOG = "error: unknown target CPU 'generic'\\nnote: the compiler's LLVM predates this CPU"
""",
    identity="nobuild compiler 1.0",
)

DEVICES = """
import json, ruda_core as ruda
status = next(s for s in ruda.backends() if s.name == BACKEND)
try:
    ruda.client(f"{BACKEND}:0")
    opened = ""
except Exception as exc:
    opened = f"{type(exc).__name__}: {exc}"
print(json.dumps({
    "status": status.status.value,
    "reason": status.reason,
    "unusable": {str(u.device): u.reason for u in status.unusable},
    "devices": [str(d) for d in ruda.enumerate_all_devices()],
    "opened": opened,
}))
"""


@pytest.fixture
def nobuild_driver(tmp_path: Path) -> Path:
    return _fake_distribution(tmp_path / "dist", "nobuild", "ruda_fake_nobuild", NOBUILD)


@pytest.fixture(scope="module")
def machine_verdicts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder holding the verdicts on the machine's own devices, those this session's
    cache folder holds (the session enumerated every backend): copied into a new cache folder,
    a child enumerating every backend probes only the fake driver (probing each real driver
    again takes seconds)."""
    cache = tmp_path_factory.mktemp("machine-verdicts")
    _known_verdicts(cache_root(), cache)
    return cache


def _known_verdicts(seed: Path, cache: Path) -> None:
    """Copy the verdicts of ``seed`` (:func:`machine_verdicts`) into the cache folder ``cache``;
    the fake driver's verdict is never among them."""
    folder = CacheKind.PROBES.folder_name
    if (seed / folder).is_dir():
        shutil.copytree(seed / folder, cache / folder, dirs_exist_ok=True)


def _devices(
    root: Path, cache: Path, seed: Path, backend: str = "nobuild", **env: str
) -> dict[str, object]:
    """What a new process sees of ``backend`` (its status, reason, unusable devices), of every
    usable device, and of opening ``backend:0``, with the verdicts of ``seed`` (the machine's
    own devices) in ``cache``."""
    _known_verdicts(seed, cache)
    result = _run(f"BACKEND = {backend!r}\n{DEVICES}", root, RUDA_CACHE_DIR=str(cache), **env)
    assert result.returncode == 0, result.stderr
    facts: dict[str, object] = json.loads(result.stdout)
    return facts


def test_a_device_whose_kernels_cannot_build_is_unusable_with_the_drivers_reason(
    nobuild_driver, machine_verdicts, tmp_path
):
    facts = _devices(nobuild_driver, tmp_path / "cache", machine_verdicts, NOBUILD_FAIL="1")
    assert facts["status"] == "unusable"
    reason = facts["unusable"]["nobuild:0"]
    assert reason == "CompilationError: error: unknown target CPU 'generic'"
    assert "nobuild:0" not in facts["devices"] and "cpu" in facts["devices"]
    assert facts["opened"] == (
        f"BackendUnavailable: nobuild:0 (nobuild compiler 1.0) is unusable: {reason}"
    )


def test_ruda_devices_lists_an_unusable_device_with_its_reason(nobuild_driver, tmp_path):
    env = {"NOBUILD_FAIL": "1", "RUDA_CACHE_DIR": str(tmp_path / "cache")}
    env["RUDA_BACKENDS"] = "nobuild"
    code = "from ruda_core.cli import main; main(['devices'])"
    text = _run(code, nobuild_driver, **env).stdout
    assert "nobuild 1.0 — unusable: nobuild:0: CompilationError: error: unknown target CPU" in text
    assert "└── nobuild:0: unusable: CompilationError: error: unknown target CPU 'generic'" in text
    assert "\n        nobuild compiler 1.0\n" in text  # which driver stack the device is
    plugins = _run("from ruda_core.cli import main; main(['plugins'])", nobuild_driver, **env)
    assert "0 usable, 1 unusable" in plugins.stdout


def test_the_probe_verdict_is_stored_per_device_identity_and_reprobe_forgets_it(
    nobuild_driver, machine_verdicts, tmp_path
):
    cache = tmp_path / "cache"
    assert _devices(nobuild_driver, cache, machine_verdicts)["status"] == "available"
    # the compiler now fails, but the stored verdict for this identity is trusted: no build
    assert (
        _devices(nobuild_driver, cache, machine_verdicts, NOBUILD_FAIL="1")["status"] == "available"
    )
    reprobe = _run(
        "from ruda_core.cli import main; main(['devices', '--reprobe'])",
        nobuild_driver,
        RUDA_CACHE_DIR=str(cache),
        RUDA_BACKENDS="nobuild",  # every verdict is dropped; only this backend's matters here
        NOBUILD_FAIL="1",
    )
    assert "nobuild:0: unusable" in reprobe.stdout, reprobe.stderr
    assert (
        _devices(nobuild_driver, cache, machine_verdicts, NOBUILD_FAIL="1")["status"] == "unusable"
    )


def test_a_device_unusable_under_a_setting_is_probed_again_once_the_setting_changes(
    machine_verdicts, tmp_path
):
    cache = tmp_path / "cache"
    facts = _devices(tmp_path, cache, machine_verdicts, "cpu", RUDA_CPU_PLANE_DIM="24")
    assert "RUDA_CPU_PLANE_DIM='24' is not a plane width" in facts["unusable"]["cpu"]
    for width in ("", "16"):  # unset, then another valid width: the stored verdict is not theirs
        mended = _devices(tmp_path, cache, machine_verdicts, "cpu", RUDA_CPU_PLANE_DIM=width)
        assert (mended["unusable"], mended["opened"]) == ({}, ""), mended


def test_a_device_a_core_setting_made_unusable_is_probed_again_once_it_is_mended(
    machine_verdicts, tmp_path
):
    cache = tmp_path / "cache"
    for limit, reason in (("-5", "RUDA_MEMORY_LIMIT='-5' is not a size"), ("100", "limit of 100")):
        facts = _devices(tmp_path, cache, machine_verdicts, "cpu", RUDA_MEMORY_LIMIT=limit)
        assert reason in facts["unusable"]["cpu"], facts
        mended = _devices(tmp_path, cache, machine_verdicts, "cpu")
        assert (mended["unusable"], mended["opened"]) == ({}, ""), mended


def test_conformance_skips_an_unusable_device_with_its_reason(nobuild_driver, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "ruda_core.testing.plugin", "-q", "-rs",
         "-p", "no:cacheprovider", "--pyargs", "ruda_core.testing.conformance.test_futures"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path_with(nobuild_driver), "NOBUILD_FAIL": "1",
             "RUDA_CACHE_DIR": str(tmp_path / "cache"), "RUDA_TEST_DEVICES": "cpu,nobuild:0",
             "RUDA_BACKENDS": "nobuild"},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:]
    assert (
        "nobuild:0 is not available: BackendUnavailable: nobuild:0 (nobuild compiler 1.0) is "
        "unusable: " in result.stdout
    )
    assert " passed" in result.stdout, "the usable device beside it runs its tests"
    assert " failed" not in result.stdout


def test_a_required_backend_without_a_usable_device_fails(nobuild_driver, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "ruda_core.testing.plugin", "-q",
         "-p", "no:cacheprovider", "--pyargs", "ruda_core.testing.conformance.test_devices",
         "-k", "required"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path_with(nobuild_driver), "NOBUILD_FAIL": "1",
             "RUDA_CACHE_DIR": str(tmp_path / "cache"), "RUDA_REQUIRE": "nobuild",
             "RUDA_TEST_DEVICES": "", "RUDA_BACKENDS": "nobuild"},
    )  # fmt: skip
    assert result.returncode == 1, result.stdout[-3000:]
    assert "backend 'nobuild' is unusable" in result.stdout


def test_a_plugin_implementing_an_unknown_hook_is_refused_naming_it(tmp_path):
    module = (
        "from ruda_core.plugins import hookimpl\n"
        "@hookimpl\n"
        "def ruda_backend_infoo():\n"
        "    return None\n"
    )
    root = _fake_distribution(tmp_path, "typo", "ruda_fake_typo", module)
    facts = json.loads(_run(PROBE, root).stdout)
    status, reason = facts["backends"]["typo"]
    assert status == "failed to import" and "ruda_backend_infoo" in reason
    assert facts["backends"]["cpu"][0] == "available"


def test_a_backend_whose_devices_client_cannot_find_again_is_refused(tmp_path):
    """A probe that lists devices of another name, or strings, and a backend name ``client``
    cannot match (upper case): each backend fails to load saying why, the others still work."""
    misnamed = driver_source("misnamed", "devices named otherdev").replace(
        'return f"{NAME}:{self.index}"', 'return f"otherdev:{self.index}"'
    )
    strings = driver_source("strings", "a probe listing strings").replace(
        "lambda: [Device(0)]", "lambda: ['strings:0']"
    )
    upper = driver_source("Upper", "an upper-case name")
    modules = {"ruda_fake_misnamed": misnamed, "ruda_fake_strings": strings}
    modules["ruda_fake_upper"] = upper
    backends = {"misnamed": "ruda_fake_misnamed", "strings": "ruda_fake_strings"}
    backends["Upper"] = "ruda_fake_upper"
    root = fake_distribution(tmp_path, "fake-names", backends, modules)
    facts = json.loads(_run(PROBE, root).stdout)
    status, reason = facts["backends"]["misnamed"]
    assert status == "failed to import" and "named 'otherdev:0'" in reason, reason
    status, reason = facts["backends"]["strings"]
    assert status == "failed to import" and "'strings:0' (str" in reason, reason
    status, reason = facts["backends"]["Upper"]
    assert status == "failed to import" and "must be lower case" in reason, reason
    assert facts["devices"][0] == "cpu"
    assert not {"otherdev:0", "strings:0"} & set(facts["devices"])


WIDEFAULT = driver_source(
    "widefault",
    "a device that builds the probe kernel but crashes the process building lines of eight u64 "
    "(WIDE_CRASH=1), returns them wrong (WIDE_WRONG=1) or never ends building them "
    "(WIDE_HANG=1), as PoCL 3 does on AMD's AVX-512 CPUs; or that refuses the kernel placing "
    "values through shared memory (PLACES_WRONG=1)",
    """\
        def build(self, compiled):
            if compiled.definition.name == "ruda_probe_places":
                if os.environ.get("PLACES_WRONG") == "1":
                    raise CompilationError("the barriers of this kernel are not supported")
            if compiled.definition.name == "ruda_probe_wide":
                if os.environ.get("WIDE_HANG") == "1":
                    time.sleep(600)
                if os.environ.get("WIDE_CRASH") == "1":
                    os.kill(os.getpid(), signal.SIGSEGV)
                if os.environ.get("WIDE_WRONG") == "1":
                    raise CompilationError("clCreateKernel failed: INVALID_KERNEL_NAME")
            return super().build(compiled)""",
    version="1.0",
    preamble="""\
import os
import signal
import time

from ruda_core.runtime import CompilationError
""",
    identity="widefault compiler 1.0",
)


@pytest.fixture
def widefault_driver(tmp_path: Path) -> Path:
    return _fake_distribution(tmp_path / "dist", "widefault", "ruda_fake_widefault", WIDEFAULT)


def test_a_device_that_fails_only_on_wide_lines_is_unusable_saying_so(
    widefault_driver, machine_verdicts, tmp_path
):
    cache = tmp_path / "cache"
    facts = _devices(widefault_driver, cache, machine_verdicts, "widefault", WIDE_WRONG="1")
    assert facts["unusable"]["widefault:0"] == (
        "the probe kernel on lines of eight u64: CompilationError: clCreateKernel failed: "
        "INVALID_KERNEL_NAME"
    )
    assert "cpu" in facts["devices"]


def test_a_driver_that_crashes_while_probed_leaves_the_caller_running(
    widefault_driver, machine_verdicts, tmp_path
):
    """The probe of an identified device runs in a child process: the caller sees the child's
    death as the device's reason, stores that verdict and goes on."""
    cache = tmp_path / "cache"
    facts = _devices(widefault_driver, cache, machine_verdicts, "widefault", WIDE_CRASH="1")
    assert facts["unusable"]["widefault:0"] == (
        "the probe process died of SIGSEGV in the probe kernel on lines of eight u64"
    )
    assert "cpu" in facts["devices"] and "widefault:0" not in facts["devices"]
    # the stored verdict is trusted: the next process neither probes nor crashes
    again = _devices(widefault_driver, cache, machine_verdicts, "widefault")
    assert again["unusable"] == facts["unusable"]


def test_a_probe_that_outlives_its_time_limit_is_ended_naming_its_step(
    widefault_driver, machine_verdicts, tmp_path
):
    """A driver whose build of a tiny kernel never ends costs the caller the probe's time limit
    once, not the driver's time."""
    started = time.monotonic()
    facts = _devices(
        widefault_driver,
        tmp_path / "cache",
        machine_verdicts,
        "widefault",
        WIDE_HANG="1",
        RUDA_PROBE_TIMEOUT_S="6",
    )
    assert time.monotonic() - started < 60
    reason = facts["unusable"]["widefault:0"]
    # the build hangs in the wide step; a slow start may still be in the first
    assert reason.startswith("the probe process did not finish within 6 s, in the probe kernel")
    assert "RUDA_PROBE_TIMEOUT_S" in reason
    assert "cpu" in facts["devices"]


def test_a_device_that_fails_the_kernel_of_places_is_not_given_the_wide_one(
    widefault_driver, machine_verdicts, tmp_path
):
    """The wide probe kernel, which a broken compiler may take a minute to fail, comes last:
    a device already found wrong never waits for it (here its build would never end)."""
    broken = {"PLACES_WRONG": "1", "WIDE_HANG": "1", "RUDA_PROBE_TIMEOUT_S": "60"}
    started = time.monotonic()
    facts = _devices(widefault_driver, tmp_path / "cache", machine_verdicts, "widefault", **broken)
    assert time.monotonic() - started < 30
    assert facts["unusable"]["widefault:0"] == (
        "the probe kernel placing values through shared memory: CompilationError: the barriers "
        "of this kernel are not supported"
    )


def test_a_probe_time_limit_that_is_not_a_positive_number_is_refused_naming_the_variable(
    monkeypatch,
):
    for said in ("soon", "0", "-1", "nan", "inf"):
        monkeypatch.setenv("RUDA_PROBE_TIMEOUT_S", said)
        with pytest.raises(ValueError, match=f"RUDA_PROBE_TIMEOUT_S={said!r}"):
            probe_timeout()
    monkeypatch.setenv("RUDA_PROBE_TIMEOUT_S", "2.5")
    assert probe_timeout() == 2.5


STRICT_TWICE = """
import ruda_core as ruda
for _ in range(2):
    try:
        print(sorted(str(d) for d in ruda.enumerate_all_devices()))
    except Exception as exc:
        print(type(exc).__name__)
"""


def test_strict_plugins_refuse_an_unusable_device_at_every_call(
    nobuild_driver, machine_verdicts, tmp_path
):
    """A strict refusal is not a verdict: a second enumeration refuses again rather than
    listing the device that failed its probe."""
    cache = tmp_path / "cache"
    _known_verdicts(machine_verdicts, cache)
    result = _run(
        STRICT_TWICE,
        nobuild_driver,
        RUDA_CACHE_DIR=str(cache),
        RUDA_STRICT_PLUGINS="1",
        RUDA_BACKENDS="cpu,nobuild",
        NOBUILD_FAIL="1",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["PluginError", "PluginError"]


UNKNOWN_DEVICE = """
import ruda_core as ruda
try:
    ruda.client("nosuch:0")
except ValueError as exc:
    print(exc)
"""


def test_a_device_of_a_backend_left_out_by_ruda_backends_is_unknown_saying_so():
    code = UNKNOWN_DEVICE
    for selected in ("cuda", "cpu"):  # a missing backend selected, or only the reference one
        result = _run(code, RUDA_BACKENDS=selected)
        assert result.returncode == 0, result.stderr
        assert "RUDA_BACKENDS selects" in result.stdout, result.stdout
        assert "which leaves out any backend 'nosuch'" in result.stdout


def _timed_driver(name: str) -> str:
    """A device whose build of the probe's first kernel takes a second, and is written down
    (start, end and the process, as ``<name> <start> <end> <pid>``) in the file ``BUILDS_LOG``
    names."""
    return driver_source(
        name,
        "a device whose compiler takes a second to build the probe's first kernel",
        """\
        def build(self, compiled):
            if compiled.definition.name == "ruda_probe":
                start = time.time()
                time.sleep(1.0)
                with open(os.environ["BUILDS_LOG"], "a") as log:
                    log.write(f"{NAME} {start} {time.time()} {os.getpid()}\\n")
            return super().build(compiled)""",
        preamble=f"import os\nimport time\n\nNAME = {name!r}\n",
        identity=f"{name} compiler 1.0",
    )


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: probes take turns")
def test_the_devices_of_several_backends_are_probed_side_by_side(machine_verdicts, tmp_path):
    """A first enumeration probes every device in a child process of its own, at once where
    the machine has the cores: it waits for the slowest probe, not for the sum of them."""
    modules = {"ruda_fake_slowa": _timed_driver("slowa"), "ruda_fake_slowb": _timed_driver("slowb")}
    backends = {"slowa": "ruda_fake_slowa", "slowb": "ruda_fake_slowb"}
    root = fake_distribution(tmp_path / "dist", "fake-driver", backends, modules)
    cache, log = tmp_path / "cache", tmp_path / "builds.log"
    _known_verdicts(machine_verdicts, cache)
    env = {"RUDA_CACHE_DIR": str(cache), "BUILDS_LOG": str(log)}
    result = _run(PROBE, root, **env)
    assert result.returncode == 0, result.stderr
    assert {"slowa:0", "slowb:0"} <= set(json.loads(result.stdout)["devices"])
    builds = {
        name: (float(a), float(b))
        for name, a, b, _ in map(str.split, log.read_text().split("\n")[:-1])
    }
    (a_start, a_end), (b_start, b_end) = builds["slowa"], builds["slowb"]
    assert a_start < b_end and b_start < a_end  # the two builds overlapped
    # the verdicts are stored: a second process probes neither
    log.unlink()
    again = _run(PROBE, root, **env)
    assert {"slowa:0", "slowb:0"} <= set(json.loads(again.stdout)["devices"])
    assert not log.exists()


def test_processes_that_start_together_probe_a_device_once(machine_verdicts, tmp_path):
    """Processes that enumerate at once, with no verdict stored, take turns: one probes the
    device, the others wait for its verdict and read it."""
    root = _fake_distribution(tmp_path / "dist", "slowa", "ruda_fake_slowa", _timed_driver("slowa"))
    cache, log = tmp_path / "cache", tmp_path / "builds.log"
    _known_verdicts(machine_verdicts, cache)
    env = {**os.environ, "PYTHONPATH": path_with(root), "RUDA_CACHE_DIR": str(cache),
           "BUILDS_LOG": str(log), "RUDA_BACKENDS": "slowa"}  # fmt: skip
    pipe, command = subprocess.PIPE, [sys.executable, "-c", PROBE]
    children = [
        subprocess.Popen(command, env=env, stdout=pipe, stderr=pipe, text=True) for _ in range(3)
    ]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert "slowa:0" in json.loads(out)["devices"]
    probing = {line.split()[-1] for line in log.read_text().splitlines()}
    assert len(probing) == 1, "one process probed the device"
