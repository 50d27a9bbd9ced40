"""The backend folder a local tritonserver loads (`--backend-directory`), prepared once per content.

A running tritonserver has `python/libtriton_python.so` mapped: rewriting it in place crashes that server
(SIGSEGV) and a concurrent copy fails with ETXTBSY. So the folder is named after a hash of everything in it,
built under a temp name and renamed into place; an existing folder is complete and never written again.
The python backend stub embeds the *system* libpython and ignores venvs, so the folder gets the stub for
that Python and `numpy<2` installed into it (docs/design/triton.md §8).

The stub's interpreter is isolated (pybind11's `scoped_interpreter`, python_backend src/pb_stub.cc @ r24.10: it
ignores every PYTHON* variable) but finds its standard library from the first `python3` on PATH (CPython
Modules/getpath.py @ v3.11.2: the program name is resolved against PATH, "The use_environment value is ignored
for this lookup", and a `pyvenv.cfg` beside it names another `home`). With a virtualenv of another
Python activated, that is the other Python's `lib-dynload` (`_ssl...so: undefined symbol`). So tritonserver,
whose environment the stub inherits (it starts it through `bash -c`, src/stub_launcher.cc @ r24.10), gets an
environment built from an allowlist (`stub_env`), with the stub Python's own bin folder first on PATH.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from specdeploy.errors import MissingDependency, StepFailed
from specdeploy.execute.process import NoAnswer, ask
from specdeploy.runtime_paths import pytriton_root

NUMPY = "numpy<2"
KEPT = (
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "NO_PROXY",
    "no_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
)
KEPT_PREFIXES = (
    "LC_",
    "XDG_",
    "HF_",
    "SPECDEPLOY_",
    "CUDA_",
    "NVIDIA_",
    "NCCL_",
    "TRTLLM_",
    "TLLM_",
    "OMP_",
    "MKL_",
    "TOKENIZERS_",
    "TRANSFORMERS_",
    "TORCH_",
)
"""What tritonserver and the stub see of this process's environment: locale, caches (hub, specdeploy), GPUs,
threads, proxies. Never PYTHON*, VIRTUAL_ENV, CONDA_*, LD_PRELOAD or BASH_ENV (bash runs it before the stub)."""


def bundle() -> Path:
    """nvidia-pytriton's install root, holding `tritonserver/bin/tritonserver`."""
    root = pytriton_root()
    if root is None or not (root / "tritonserver" / "bin" / "tritonserver").is_file():
        raise MissingDependency("no bundled tritonserver found", hint="pip install 'specdeploy[triton]'")
    return root


def system_python_version() -> str:
    """The X.Y of the libpython the stub links: the OS's shared libpython3.X (Debian 12: 3.11), else ours."""
    found = sorted(Path("/usr/lib").glob("*/libpython3.*.so.1.0")) + sorted(
        Path("/usr/lib").glob("libpython3.*.so.1.0")
    )
    if found:
        return found[-1].name.removeprefix("libpython").removesuffix(".so.1.0")
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def stub_python(version: str | None = None) -> Path:
    """The `python3` the stub's PATH must find first: the interpreter of the libpython it links (Debian's
    /usr/bin/python3.11 for /usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0), else this Python's base."""
    version = version or system_python_version()
    for found in sorted(Path("/usr/lib").glob(f"*/libpython{version}.so.1.0")) + [
        Path(f"/usr/lib/libpython{version}.so.1.0")
    ]:
        if found.is_file() and Path(f"/usr/bin/python{version}").is_file():
            return Path(f"/usr/bin/python{version}")
    return Path(sys.base_prefix) / "bin" / f"python{version}"


def stub_env(extra: dict[str, str] | None = None, *, environ: dict[str, str] | None = None) -> dict[str, str]:
    """tritonserver's (and so the stub's) environment: the allowlisted part of `environ` (default: ours), PATH
    led by the stub Python's folder and without virtualenv folders, LD_LIBRARY_PATH led by the bundle's
    libraries, then `extra` (a repository's `server_env`)."""
    source = dict(os.environ if environ is None else environ)
    env = {k: v for k, v in source.items() if k in KEPT or k.startswith(KEPT_PREFIXES)}
    paths = [
        p
        for p in source.get("PATH", os.defpath).split(os.pathsep)
        if p and not (Path(p).parent / "pyvenv.cfg").is_file()
    ]
    env["PATH"] = os.pathsep.join(dict.fromkeys([str(stub_python().parent), *paths]))
    libs = bundle().parent / "nvidia_pytriton.libs"
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(libs), source.get("LD_LIBRARY_PATH", "")) if p)
    return {**env, **(extra or {})}


def stub_report() -> str:
    """doctor's line: the Python the stub embeds, and what the first `python3` of the stub's environment is when
    run isolated there (as the stub's embedded interpreter is): the same X.Y, with a working `ssl`."""
    try:
        env = stub_env()
    except MissingDependency:
        return "no bundled tritonserver (pip install 'specdeploy[triton]')"
    version = system_python_version()
    found = shutil.which("python3", path=env["PATH"])
    if found is None:
        return f"BROKEN: the stub links Python {version} but finds no python3 on PATH ({env['PATH']})"
    code = "import ssl, sys; print('%d.%d' % sys.version_info[:2], sys.prefix)"
    try:
        probe = ask([found, "-I", "-c", code], env=env, timeout=60)
    except NoAnswer as exc:
        return f"BROKEN: the stub's python3: {exc}"
    if probe.returncode != 0:
        return f"BROKEN: {found} cannot import ssl in the stub's environment: {probe.stderr.strip()[-200:]}"
    seen, prefix = probe.stdout.split(maxsplit=1)
    if seen != version:
        return f"BROKEN: the stub links Python {version} but its PATH leads to Python {seen} ({prefix.strip()})"
    dropped = sorted(k for k in os.environ if k not in env and k.startswith(("PYTHON", "VIRTUAL_ENV", "CONDA")))
    return f"Python {version}, standard library of {prefix.strip()}; environment from an allowlist" + (
        f" (without {', '.join(dropped)})" if dropped else ""
    )


def _sources(version: str, extra: dict[str, Path]) -> dict[str, Path]:
    """Destination (relative to the folder) -> source file."""
    root = bundle() / "tritonserver"
    stub = root / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.is_file():
        raise MissingDependency(f"nvidia-pytriton has no python backend stub for Python {version}")
    files = {
        f"python/{name}": root / "backends" / "python" / name
        for name in ("libtriton_python.so", "triton_python_backend_utils.py")
    }
    files["python/triton_python_backend_stub"] = stub
    files.update({f"{name}/model.py": model_py for name, model_py in extra.items()})
    return files


def _key(version: str, files: dict[str, Path]) -> str:
    digest = hashlib.sha256(f"{version}\n{NUMPY}\n".encode())
    for rel, source in sorted(files.items()):
        digest.update(f"{rel}\n".encode())
        digest.update(hashlib.sha256(source.read_bytes()).digest())
    return digest.hexdigest()[:12]


def prepare_backends(cache: Path, *, python_version: str | None = None, extra: dict[str, Path] | None = None) -> Path:
    """`cache/triton-backends-2.51-pyX.Y-<key>/` holding `python/{libtriton_python.so, utils, stub, numpy<2}`
    (+ `extra` python backends as `<name>/model.py`): reused when present, else built aside and renamed in."""
    version = python_version or system_python_version()
    files = _sources(version, extra or {})
    folder = cache / f"triton-backends-2.51-py{version}-{_key(version, files)}"
    if folder.is_dir():
        return folder
    building = cache / f".{folder.name}.building-{os.getpid()}"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(building, ignore_errors=True)
        for rel, source in files.items():
            (building / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, building / rel)
        (building / "python" / "triton_python_backend_stub").chmod(0o755)
        _install_numpy(building / "python", version, log_path=cache / f"{folder.name}.pip.log")
        try:
            building.rename(folder)
        except OSError:
            if not folder.is_dir():  # another start won the race: theirs is as good as ours
                raise
    except OSError as exc:
        raise StepFailed(
            f"could not prepare the Triton backend folder under {cache}: {exc}",
            hint="set SPECDEPLOY_CACHE to a writable folder",
        ) from None
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return folder


def _install_numpy(target: Path, version: str, *, log_path: Path) -> None:
    from specdeploy.execute.process import child_env, run_process

    argv = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--target",
        str(target),
        "--python-version",
        version,
        "--only-binary=:all:",
        NUMPY,
    ]
    run_process(argv, log_path=log_path, env=child_env(), cwd=target, timeout=600, step_id="backends.numpy")
