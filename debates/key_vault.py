"""API keys entered on the "Connect a model" page, encrypted at rest.

A key is sealed with Fernet (AES-128-CBC with HMAC-SHA256) together with the origin it was entered
for (scheme, host and port): a key is sent only there, and a row whose address was changed later
(another port of the same host, http for https, or an edit in the database) cannot redirect it,
since the origin is inside the sealed token. The Fernet key is derived
(HKDF-SHA256) from `AGORA_KEY_ENCRYPTION_KEY`, never from `SECRET_KEY` (a leaked session secret
must not open the keys, and rotating it must not lose them). When that setting is empty (the
embedded set-up) a random one is generated once into a file beside the SQLite database
(`AGORA_KEY_ENCRYPTION_KEY_FILE`, mode 0600), like a local secret; production sets the variable
(`agora.checks` warns otherwise). Old keys stay readable through `AGORA_KEY_ENCRYPTION_KEY_FALLBACKS`
(MultiFernet) until `manage.py rotate_provider_keys` has sealed every key again with the current one.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

SALT = b"agora provider keys"
INFO = b"fernet v1"


class VaultError(Exception):
    """A stored key that cannot be read (the encryption key changed without a fallback)."""


def _derive(material: str) -> Fernet:
    raw = HKDF(algorithm=hashes.SHA256(), length=32, salt=SALT, info=INFO).derive(material.encode())
    return Fernet(base64.urlsafe_b64encode(raw))


def key_file() -> Path:
    """Where the generated key lives when AGORA_KEY_ENCRYPTION_KEY is unset: the setting's path,
    else beside the SQLite database, else in the cache directory."""
    if settings.AGORA_KEY_ENCRYPTION_KEY_FILE:
        return Path(settings.AGORA_KEY_ENCRYPTION_KEY_FILE)
    db = settings.DATABASES["default"]
    name = str(db.get("NAME") or "")
    if db["ENGINE"].endswith("sqlite3") and name and not name.startswith((":memory:", "file:")):
        return Path(name).with_name(Path(name).name + ".keys")
    return Path(settings.AGORA_CACHE_DIR) / "agora-key-encryption.key"


def _generated() -> str:
    """The local secret, made on first use (O_EXCL: of two processes starting at once, one writes
    it and the other reads it)."""
    path = key_file()
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    made = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(made + "\n")
    return made


def current_material() -> str:
    return settings.AGORA_KEY_ENCRYPTION_KEY or _generated()


def box() -> MultiFernet:
    """The current key first (it seals), then the fallbacks (they only open)."""
    materials = [current_material(), *settings.AGORA_KEY_ENCRYPTION_KEY_FALLBACKS]
    return MultiFernet([_derive(m) for m in dict.fromkeys(m for m in materials if m)])


DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> str:
    """`scheme://host:port` of a URL, the default port written out ("" when it has none): where a
    key may go. Another port of the same host is another server, and http is not https."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return ""
    host = (parts.hostname or "").lower()
    if not host or not port:
        return ""
    return f"{parts.scheme.lower()}://{f'[{host}]' if ':' in host else host}:{port}"


def seal(key: str, bound_to: str) -> str:
    """The key sealed with the origin (`origin()`) it may go to."""
    payload = json.dumps({"key": key, "origin": bound_to}).encode()
    return box().encrypt(payload).decode()


def open_sealed(token: str) -> tuple[str, str]:
    """(the key, the origin it may go to). A key sealed before keys were bound to an origin gives
    its host alone, which no origin equals: it is entered again."""
    try:
        data = json.loads(box().decrypt(token.encode()))
    except (InvalidToken, ValueError) as error:
        raise VaultError(
            "the stored key cannot be read with AGORA_KEY_ENCRYPTION_KEY (was it changed? put the old one in "
            "AGORA_KEY_ENCRYPTION_KEY_FALLBACKS), or enter the key again on the Connect a model page"
        ) from error
    return str(data["key"]), str(data.get("origin") or data.get("host") or "")


def rebind_to_origin(token: str, url: str) -> str | None:
    """A key sealed before keys were bound to an origin (its host alone) sealed again for `url`'s
    origin, when `url` is on that host: the host-only seal let the key go to any port and scheme of
    that host, so binding it to the one the row names now narrows it and keeps it. None when the
    token is already bound to an origin, names another host, or cannot be read."""
    try:
        data = json.loads(box().decrypt(token.encode()))
    except (InvalidToken, ValueError):
        return None
    bound_to, host = data.get("origin"), str(data.get("host") or "").lower()
    target = origin(url)
    if bound_to or not host or not target or (urlsplit(url.strip()).hostname or "").lower() != host:
        return None
    return seal(str(data["key"]), target)


def rotate(token: str) -> str:
    """The same key sealed again with the current encryption key."""
    try:
        return box().rotate(token.encode()).decode()
    except InvalidToken as error:
        raise VaultError("a stored key cannot be read with any of the configured encryption keys") from error


def tail(token: str) -> str:
    """The last four characters of a stored key ("" if it cannot be read): all a page ever shows."""
    if not token:
        return ""
    try:
        key, _origin = open_sealed(token)
    except VaultError:
        return ""
    return key[-4:] if len(key) >= 12 else ""
