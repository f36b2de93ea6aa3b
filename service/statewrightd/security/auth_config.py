"""The authentication file (``--auth-config``): who may call, and with which roles.

It is read and checked once, at start, like a definition: every problem is reported with
its path (``api_keys[0].sha256``), and a server with a bad file refuses to start.

```yaml
api_keys:                       # static keys; only their SHA-256 is stored here
  - name: ci-bot                # the principal is key:ci-bot
    sha256: 3f7a...             # statewrightd auth new-key prints a key and its hash
    grants: [{role: client, definitions: ["mail-*"]}]
jwt:                            # bearer JWTs
  issuer: https://auth.example.com/
  audience: statewright         # or a list
  jwks_file: /etc/statewright/jwks.json     # or jwks_url: https://.../jwks.json
  algorithms: [RS256, ES256, EdDSA]
  leeway: 30s                   # clock skew allowed on exp, nbf and iat
  subject_claim: sub            # the principal is jwt:<subject>
  roles_claim: roles            # optional: a list of role names, each unscoped
mtls:                           # client certificates, by a SAN (URI, DNS name or e-mail)
  - san: "spiffe://example.org/ns/prod/sa/payments-worker"   # glob patterns allowed
    grants: [{role: worker, queues: [payments]}]
principals:                     # grants for principals named by JWT subject, glob allowed
  - name: "jwt:alice"
    grants: [{role: admin}]
```
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from statewrightd.definitions.problems import Problem
from statewrightd.durations import parse_duration
from statewrightd.errors import InvalidArgument
from statewrightd.reasons import Reason
from statewrightd.security.roles import ANY, Grant, Role

ALGORITHMS = ("RS256", "ES256", "EdDSA")
_SHA256 = re.compile(r"^[0-9a-f]{64}\Z")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:/-]{0,127}\Z")
_TOP_KEYS = {"api_keys", "jwt", "mtls", "principals"}
_JWT_KEYS = {
    "issuer",
    "audience",
    "jwks_file",
    "jwks_url",
    "algorithms",
    "leeway",
    "subject_claim",
    "roles_claim",
}
_GRANT_KEYS = {"role", "definitions", "queues"}


class AuthConfigInvalid(InvalidArgument):
    default_reason = Reason.AUTH_CONFIG_INVALID

    def __init__(self, source: str, problems: list[Problem]) -> None:
        listed = "; ".join(f"{p.path or '<document>'}: {p.message}" for p in problems)
        super().__init__(f"{source}: {len(problems)} problem(s): {listed}")
        self.problems = tuple(problems)


@dataclass(frozen=True, slots=True)
class ApiKey:
    name: str
    sha256: str  # hex
    grants: tuple[Grant, ...]


@dataclass(frozen=True, slots=True)
class JwtSettings:
    issuer: str
    audiences: tuple[str, ...]
    jwks_file: Path | None
    jwks_url: str | None
    algorithms: tuple[str, ...]
    leeway: float
    subject_claim: str
    roles_claim: str | None


@dataclass(frozen=True, slots=True)
class MtlsIdentity:
    san: str  # a glob over the certificate's subject alternative names
    grants: tuple[Grant, ...]


@dataclass(frozen=True, slots=True)
class PrincipalGrants:
    name: str  # a glob over principal names
    grants: tuple[Grant, ...]


@dataclass(frozen=True, slots=True)
class AuthConfig:
    api_keys: tuple[ApiKey, ...] = ()
    jwt: JwtSettings | None = None
    mtls: tuple[MtlsIdentity, ...] = ()
    principals: tuple[PrincipalGrants, ...] = ()


def load_auth_config(path: Path) -> AuthConfig:
    """Read and check the file; AuthConfigInvalid lists every problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AuthConfigInvalid(str(path), [Problem("", f"cannot read: {exc.strerror}")]) from None
    return parse_auth_config(text, str(path), base=path.parent)


def parse_auth_config(
    text: str, source: str = "<string>", *, base: Path | None = None
) -> AuthConfig:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise AuthConfigInvalid(source, [Problem("", f"{where}not valid YAML")]) from None
    reader = _Reader(base or Path("."))
    config = reader.document(doc)
    if reader.problems:
        raise AuthConfigInvalid(source, reader.problems)
    assert config is not None
    return config


class _Reader:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.problems: list[Problem] = []

    def error(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def document(self, doc: object) -> AuthConfig | None:
        if not isinstance(doc, dict):
            self.error("", "the auth config must be a map with api_keys, jwt, mtls, principals")
            return None
        for key in doc:
            if key not in _TOP_KEYS:
                self.error(str(key), f"unknown key {key!r} (expected one of {sorted(_TOP_KEYS)})")
        keys = tuple(self.api_key(k, f"api_keys[{i}]") for i, k in self.items(doc, "api_keys"))
        mtls = tuple(self.mtls(m, f"mtls[{i}]") for i, m in self.items(doc, "mtls"))
        principals = tuple(
            self.principal(p, f"principals[{i}]") for i, p in self.items(doc, "principals")
        )
        jwt = self.jwt(doc["jwt"], "jwt") if doc.get("jwt") is not None else None
        names = [k.name for k in keys if k is not None]
        for name in {n for n in names if names.count(n) > 1}:
            self.error("api_keys", f"two keys are named {name!r}: names must be unique")
        if not keys and jwt is None and not mtls:
            self.error("", "no way to authenticate: give api_keys, jwt or mtls")
        if self.problems:
            return None
        return AuthConfig(
            api_keys=tuple(k for k in keys if k is not None),
            jwt=jwt,
            mtls=tuple(m for m in mtls if m is not None),
            principals=tuple(p for p in principals if p is not None),
        )

    def items(self, doc: Mapping[str, Any], key: str) -> list[tuple[int, Any]]:
        value = doc.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.error(key, f"{key} must be a list")
            return []
        return list(enumerate(value))

    def map(self, value: object, path: str, keys: set[str]) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.error(path, "must be a map")
            return None
        for key in value:
            if key not in keys:
                self.error(f"{path}.{key}", f"unknown key {key!r} (expected one of {sorted(keys)})")
        return value

    def name(self, value: object, path: str) -> str | None:
        if not isinstance(value, str) or not _NAME.match(value):
            self.error(path, "a name is 1 to 128 letters, digits and ._@:/- characters")
            return None
        return value

    def api_key(self, raw: object, path: str) -> ApiKey | None:
        entry = self.map(raw, path, {"name", "sha256", "grants"})
        if entry is None:
            return None
        name = self.name(entry.get("name"), f"{path}.name")
        digest = entry.get("sha256")
        if not isinstance(digest, str) or not _SHA256.match(digest.lower()):
            self.error(f"{path}.sha256", "sha256 must be the 64 hex digits of the key's SHA-256")
            digest = None
        grants = self.grants(entry.get("grants"), f"{path}.grants")
        if name is None or digest is None or grants is None:
            return None
        return ApiKey(name, digest.lower(), grants)

    def mtls(self, raw: object, path: str) -> MtlsIdentity | None:
        found = self.pattern_grants(raw, path, "san", "a subject alternative name")
        return None if found is None else MtlsIdentity(*found)

    def principal(self, raw: object, path: str) -> PrincipalGrants | None:
        found = self.pattern_grants(raw, path, "name", "a principal (jwt:SUBJECT)")
        return None if found is None else PrincipalGrants(*found)

    def pattern_grants(
        self, raw: object, path: str, key: str, what: str
    ) -> tuple[str, tuple[Grant, ...]] | None:
        """An entry of ``key`` (``what``, or a glob of one) and the grants it gets."""
        entry = self.map(raw, path, {key, "grants"})
        if entry is None:
            return None
        pattern = entry.get(key)
        if not isinstance(pattern, str) or not pattern:
            self.error(f"{path}.{key}", f"{key} must be {what}, or a glob of one")
            pattern = None
        grants = self.grants(entry.get("grants"), f"{path}.grants")
        if pattern is None or grants is None:
            return None
        return pattern, grants

    def grants(self, raw: object, path: str) -> tuple[Grant, ...] | None:
        if not isinstance(raw, list) or not raw:
            self.error(path, "grants must be a non-empty list of {role, definitions, queues}")
            return None
        out: list[Grant] = []
        for i, item in enumerate(raw):
            grant = self.grant(item, f"{path}[{i}]")
            if grant is not None:
                out.append(grant)
        return tuple(out) if len(out) == len(raw) else None

    def grant(self, raw: object, path: str) -> Grant | None:
        entry = self.map(raw, path, _GRANT_KEYS)
        if entry is None:
            return None
        role_name = entry.get("role")
        try:
            role = Role(str(role_name))
        except ValueError:
            self.error(f"{path}.role", f"role must be one of {[r.value for r in Role]}")
            return None
        definitions = self.patterns(entry.get("definitions"), f"{path}.definitions")
        queues = self.patterns(entry.get("queues"), f"{path}.queues")
        if definitions is None or queues is None:
            return None
        return Grant(role, definitions, queues)

    def patterns(self, raw: object, path: str) -> tuple[str, ...] | None:
        if raw is None:
            return ANY
        if not isinstance(raw, list) or not raw or not all(isinstance(p, str) and p for p in raw):
            self.error(path, "must be a non-empty list of names or glob patterns")
            return None
        return tuple(raw)

    def jwt(self, raw: object, path: str) -> JwtSettings | None:
        entry = self.map(raw, path, _JWT_KEYS)
        if entry is None:
            return None
        ok = True
        issuer = entry.get("issuer")
        if not isinstance(issuer, str) or not issuer:
            self.error(f"{path}.issuer", "issuer is required: the iss every token must carry")
            ok = False
        audience = entry.get("audience")
        audiences = [audience] if isinstance(audience, str) else audience
        if (
            not isinstance(audiences, list)
            or not audiences
            or not all(isinstance(a, str) and a for a in audiences)
        ):
            self.error(f"{path}.audience", "audience is required: a string or a list of them")
            ok = False
        jwks_file, jwks_url = entry.get("jwks_file"), entry.get("jwks_url")
        if (jwks_file is None) == (jwks_url is None):
            self.error(path, "give exactly one of jwks_file and jwks_url")
            ok = False
        elif jwks_file is not None and not isinstance(jwks_file, str):
            self.error(f"{path}.jwks_file", "jwks_file must be a path")
            ok = False
        elif jwks_url is not None and (
            not isinstance(jwks_url, str) or not jwks_url.startswith(("https://", "http://"))
        ):
            self.error(f"{path}.jwks_url", "jwks_url must be an https:// URL")
            ok = False
        algorithms = entry.get("algorithms", list(ALGORITHMS))
        if (
            not isinstance(algorithms, list)
            or not algorithms
            or any(a not in ALGORITHMS for a in algorithms)
        ):
            self.error(f"{path}.algorithms", f"algorithms must be a list of {list(ALGORITHMS)}")
            ok = False
        leeway_text = entry.get("leeway", "30s")
        leeway = parse_duration(leeway_text) if isinstance(leeway_text, str) else None
        if leeway is None or leeway > 600:
            self.error(f"{path}.leeway", "leeway must be a duration of at most 10m, e.g. 30s")
            ok = False
        subject = entry.get("subject_claim", "sub")
        roles = entry.get("roles_claim")
        for key, value in (("subject_claim", subject), ("roles_claim", roles)):
            if value is not None and (not isinstance(value, str) or not value):
                self.error(f"{path}.{key}", f"{key} must be a claim name")
                ok = False
        if not ok:
            return None
        assert isinstance(issuer, str) and isinstance(audiences, list)
        return JwtSettings(
            issuer=issuer,
            audiences=tuple(audiences),
            jwks_file=(self.base / jwks_file) if isinstance(jwks_file, str) else None,
            jwks_url=jwks_url,
            algorithms=tuple(algorithms),
            leeway=float(leeway or 0.0),
            subject_claim=subject,
            roles_claim=roles,
        )
