"""Named console users (issue 44): who may look, who may label.

A users file (``VERDICTFLOW_CONSOLE_USERS``) lists each user's role and the SHA-256 of their
token, never the token::

    users:
      alice: {role: reviewer, token_sha256: 9f86d0...}
      bob:   {role: viewer,   token_sha256: 60303a...}

Roles: ``viewer`` reads the console and the review queue; ``reviewer`` also labels;
``admin`` also labels (and is what the single shared token of a console without a users file
amounts to, except that labels need a name: see :mod:`~verdictflow.console.review_routes`).
``verdictflow users add NAME --role reviewer`` makes a random token, prints it once and
writes its hash. A plain SHA-256 suffices because the tokens are 256-bit random strings the
command makes, not passwords a person picks: there is nothing to guess a dictionary from.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import yaml

from verdictflow.exceptions import VerdictflowError
from verdictflow.models.labels import NAME_PATTERN, Role

ROLES: tuple[Role, ...] = get_args(Role)
#: Roles that may label verdicts.
LABELLERS: frozenset[str] = frozenset({"reviewer", "admin"})


class UsersFileError(VerdictflowError):
    """The users file cannot be read or is not what it should be (names the file)."""


@dataclass(frozen=True)
class User:
    name: str
    role: Role
    token_sha256: str

    @property
    def may_label(self) -> bool:
        return self.role in LABELLERS


def token_digest(token: str | bytes) -> str:
    raw = token.encode() if isinstance(token, str) else token
    return hashlib.sha256(raw).hexdigest()


class Users:
    """The users of one file, found by token or by name."""

    def __init__(self, users: list[User]) -> None:
        self.by_name = {u.name: u for u in users}
        self._by_digest = {u.token_sha256: u for u in users}

    def __len__(self) -> int:
        return len(self.by_name)

    def by_token(self, token: bytes) -> User | None:
        """The user whose token this is (the lookup is by digest: the token is never kept)."""
        found = self._by_digest.get(token_digest(token))
        if found is None or not hmac.compare_digest(found.token_sha256, token_digest(token)):
            return None
        return found


def load_users(path: Path | str) -> Users:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_bytes()) or {}
    except OSError as exc:
        raise UsersFileError(f"cannot read users file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise UsersFileError(f"users file {path} is not valid YAML: {exc}") from None
    entries = data.get("users") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise UsersFileError(f"users file {path}: expected a mapping 'users: {{name: ...}}'")
    users = [_user(path, name, entry) for name, entry in entries.items()]
    digests = [u.token_sha256 for u in users]
    if len(set(digests)) != len(digests):
        raise UsersFileError(f"users file {path}: two users share a token")
    return Users(users)


def _user(path: Path, name: Any, entry: Any) -> User:
    if not isinstance(entry, dict):
        raise UsersFileError(f"users file {path}: user {name!r} is not a mapping")
    role, digest = entry.get("role"), entry.get("token_sha256")
    if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
        raise UsersFileError(f"users file {path}: {name!r} is not a user name ({NAME_PATTERN})")
    if role not in ROLES:
        raise UsersFileError(f"users file {path}: user {name}: role must be one of {ROLES}")
    if not isinstance(digest, str) or len(digest) != 64 or not _is_hex(digest):
        raise UsersFileError(f"users file {path}: user {name}: token_sha256 is not a SHA-256")
    return User(name, role, digest.lower())


def _is_hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


def add_user(path: Path, name: str, role: Role) -> str:
    """Add (or re-token) ``name`` with ``role`` in the users file; return the new token, which
    is shown once and kept nowhere. The file is written readable by its owner only."""
    data: dict[str, Any] = {"users": {}}
    if path.exists():
        load_users(path)  # refuse to rewrite a broken file
        data = yaml.safe_load(path.read_bytes()) or {"users": {}}
    token = secrets.token_urlsafe(32)
    data["users"][name] = {"role": role, "token_sha256": token_digest(token)}
    _user(path, name, data["users"][name])
    _write(path, data)
    return token


def remove_user(path: Path, name: str) -> bool:
    users = load_users(path)
    if name not in users.by_name:
        return False
    data = yaml.safe_load(path.read_bytes())
    del data["users"][name]
    _write(path, data)
    return True


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        yaml.safe_dump(data, out, sort_keys=True)
    os.replace(tmp, path)
