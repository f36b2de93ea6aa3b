"""Turning a call's credentials into a principal: a bearer token (a JWT or a static API
key) or the client certificate of an mTLS connection.

Signatures, expiry, issuer and audience are PyJWT's to check; keys come from a JWKS file
(re-read when it changes) or a JWKS URL (fetched off the event loop, cached, and fetched
again when a token names a key the cache does not have, which is how a rotation shows).
A verified token is remembered until it expires, so that a client sending the same token
on every call pays for one signature check, not one per call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import time
import urllib.request
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import jwt

from statewrightd import errors
from statewrightd.reasons import Reason
from statewrightd.security.auth_config import AuthConfig, JwtSettings
from statewrightd.security.roles import Grant, Principal, Role, matches

_log = logging.getLogger(__name__)

TOKEN_CACHE_SIZE = 10_000
JWKS_URL_LIFESPAN = 300.0
JWKS_URL_TIMEOUT = 5.0
# A token naming an unknown key makes the server fetch the JWKS again, but not more often
# than this: a flood of tokens with made-up key ids must not become a flood of fetches.
JWKS_MIN_REFETCH = 10.0
SAN_KEYS = ("x509_subject_alternative_name",)


def _unauthenticated(message: str) -> errors.Unauthenticated:
    return errors.Unauthenticated(message, reason=Reason.UNAUTHENTICATED)


class _Jwks:
    """The verification keys of one JWKS source, by key id."""

    def __init__(self, settings: JwtSettings) -> None:
        self._file = settings.jwks_file
        self._url = settings.jwks_url
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._loaded_mtime: float | None = None
        self._fetched = 0.0
        self._lock = asyncio.Lock()

    async def key(self, kid: str | None) -> jwt.PyJWK:
        if self._file is not None:
            self._read_file()
        elif time.monotonic() - self._fetched > JWKS_URL_LIFESPAN or (
            kid not in self._keys and time.monotonic() - self._fetched > JWKS_MIN_REFETCH
        ):
            async with self._lock:
                await asyncio.to_thread(self._fetch)
        found = self._keys.get(kid)
        if found is None and kid is None and len(self._keys) == 1:
            found = next(iter(self._keys.values()))
        if found is None:
            raise _unauthenticated("the token is signed with a key the server does not know")
        return found

    def _read_file(self) -> None:
        assert self._file is not None
        try:
            mtime = self._file.stat().st_mtime
        except OSError as exc:
            raise errors.Unavailable(f"the JWKS file cannot be read: {exc.strerror}") from None
        if mtime != self._loaded_mtime:
            self._keys = _parse_jwks(self._file.read_text(encoding="utf-8"))
            self._loaded_mtime = mtime

    def _fetch(self) -> None:
        assert self._url is not None
        self._fetched = time.monotonic()
        try:
            with urllib.request.urlopen(self._url, timeout=JWKS_URL_TIMEOUT) as answer:
                self._keys = _parse_jwks(answer.read().decode("utf-8"))
        except (OSError, ValueError) as exc:
            # Keep the keys already known: an identity provider's outage must not lock out
            # every caller whose token is signed with a key fetched before.
            _log.warning("could not fetch the JWKS from %s: %s", self._url, exc)

    def preload(self) -> None:
        """Read the keys once at start, so that a bad file stops the server there."""
        if self._file is not None:
            self._read_file()


def _parse_jwks(text: str) -> dict[str | None, jwt.PyJWK]:
    data = json.loads(text)
    keys: dict[str | None, jwt.PyJWK] = {}
    for entry in data.get("keys", []):
        try:
            key = jwt.PyJWK.from_dict(entry)
        except jwt.PyJWKError as exc:
            _log.warning("ignoring a JWKS key that cannot be used: %s", exc)
            continue
        keys[entry.get("kid")] = key
    return keys


class Authenticator:
    """Finds the principal of a call. ``authenticate`` runs on the asyncio loop."""

    def __init__(self, config: AuthConfig) -> None:
        self._config = config
        self._keys = {k.sha256: k for k in config.api_keys}
        self._jwks = _Jwks(config.jwt) if config.jwt is not None else None
        self._tokens: OrderedDict[str, tuple[Principal, float]] = OrderedDict()

    def preload(self) -> None:
        if self._jwks is not None:
            self._jwks.preload()

    async def authenticate(
        self, metadata: Sequence[tuple[str, str | bytes]], auth_context: Mapping[str, Any]
    ) -> Principal:
        token = _bearer(metadata)
        if token is not None:
            return await self._token(token)
        sans = [
            v.decode() if isinstance(v, bytes) else str(v)
            for key in SAN_KEYS
            for v in auth_context.get(key, ())
        ]
        if sans and self._config.mtls:
            for identity in self._config.mtls:
                san = next((s for s in sans if matches([identity.san], s)), None)
                if san is not None:
                    name = f"mtls:{san}"
                    return Principal(name, identity.grants + self._mapped(name))
            raise _unauthenticated("the client certificate names no identity the server knows")
        raise _unauthenticated(
            "this call needs credentials: a bearer token in the authorization metadata"
            + (", or a client certificate" if self._config.mtls else "")
        )

    async def _token(self, token: str) -> Principal:
        cached = self._tokens.get(token)
        if cached is not None:
            principal, expires = cached
            if time.time() < expires:
                self._tokens.move_to_end(token)
                return principal
            del self._tokens[token]
        if token.count(".") == 2 and self._jwks is not None:
            principal, expires = await self._jwt(token)
        else:
            principal, expires = self._api_key(token), float("inf")
        self._tokens[token] = (principal, expires)
        if len(self._tokens) > TOKEN_CACHE_SIZE:
            self._tokens.popitem(last=False)
        return principal

    def _api_key(self, token: str) -> Principal:
        key = self._keys.get(hashlib.sha256(token.encode()).hexdigest())
        if key is None:
            raise _unauthenticated("the bearer token is not a key or a token the server accepts")
        name = f"key:{key.name}"
        return Principal(name, key.grants + self._mapped(name))

    async def _jwt(self, token: str) -> tuple[Principal, float]:
        settings = self._config.jwt
        assert settings is not None and self._jwks is not None
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise _unauthenticated("the bearer token is not a well-formed JWT") from None
        key = await self._jwks.key(header.get("kid"))
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=list(settings.algorithms),
                audience=list(settings.audiences),
                issuer=settings.issuer,
                leeway=settings.leeway,
                options={"require": ["exp", "iss", "aud", settings.subject_claim]},
            )
        except jwt.InvalidSignatureError:
            raise _unauthenticated("the token's signature does not verify") from None
        except jwt.MissingRequiredClaimError as exc:
            raise _bad_claim(exc.claim, "present: the server requires it") from None
        except jwt.PyJWTError as exc:
            # The signature held (PyJWT checks it before any claim): a claim of the wrong
            # type is named as such, not reported as a mismatch or a traceback.
            raise _claims_error(token, settings, exc) from None
        _check_claim_types(claims, settings)
        name = f"jwt:{claims[settings.subject_claim]}"
        grants: list[Grant] = []
        if settings.roles_claim is not None:
            roles = claims.get(settings.roles_claim) or []
            grants += [Grant(Role(r)) for r in roles if r in Role._value2member_map_]
        return Principal(name, tuple(grants) + self._mapped(name)), float(claims["exp"])

    def _mapped(self, name: str) -> tuple[Grant, ...]:
        return tuple(
            g for p in self._config.principals if matches([p.name], name) for g in p.grants
        )


MAX_SUBJECT_LENGTH = 256
_TIME_CLAIMS = ("exp", "nbf", "iat")


def _bad_claim(
    claim: str, should_be: str, value: object = None, given: bool = False
) -> errors.Unauthenticated:
    got = f", not {_describe(value)}" if given else ""
    return errors.Unauthenticated(
        f"the token's {claim!r} claim must be {should_be}{got}",
        reason=Reason.TOKEN_CLAIM_INVALID,
        metadata={"claim": claim},
    )


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string" if value else "an empty string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    return type(value).__name__


def _check_claim_types(claims: Mapping[str, Any], settings: JwtSettings) -> None:
    """Refuse the first claim the server reads whose value is not of its type."""
    for claim in _TIME_CLAIMS:
        value = claims.get(claim)
        if claim in claims and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)  # JSON as Python reads it has NaN and Infinity
        ):
            raise _bad_claim(claim, "a finite number of seconds since the epoch", value, True)
    if "iss" in claims and not isinstance(claims["iss"], str):
        raise _bad_claim("iss", "a string", claims["iss"], True)
    aud = claims.get("aud")
    if "aud" in claims and not (
        isinstance(aud, str) or (isinstance(aud, list) and all(isinstance(a, str) for a in aud))
    ):
        raise _bad_claim("aud", "a string or a list of strings", aud, True)
    subject = claims.get(settings.subject_claim)
    if (
        not isinstance(subject, str)
        or not subject
        or len(subject) > MAX_SUBJECT_LENGTH
        or not subject.isprintable()
    ):
        should_be = f"a non-empty string of up to {MAX_SUBJECT_LENGTH} printable characters"
        raise _bad_claim(settings.subject_claim, should_be, subject, True)
    if settings.roles_claim is not None:
        roles = claims.get(settings.roles_claim)
        if roles is not None and not (
            isinstance(roles, list) and all(isinstance(r, str) for r in roles)
        ):
            raise _bad_claim(settings.roles_claim, "a list of role names", roles, True)


def _claims_error(token: str, settings: JwtSettings, exc: jwt.PyJWTError) -> errors.Unauthenticated:
    """What a claim check PyJWT refused means to the caller."""
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        claims = None
    if isinstance(claims, dict):
        try:
            _check_claim_types(claims, settings)
        except errors.Unauthenticated as typed:
            return typed
    if isinstance(exc, jwt.ExpiredSignatureError):
        return _unauthenticated("the token has expired")
    if isinstance(exc, jwt.InvalidAudienceError):
        return _unauthenticated("the token is not meant for this server (audience)")
    if isinstance(exc, jwt.InvalidIssuerError):
        return _unauthenticated("the token's issuer is not the one the server trusts")
    return _unauthenticated(f"the token is not valid: {exc}")


def _bearer(metadata: Sequence[tuple[str, str | bytes]]) -> str | None:
    for key, value in metadata:
        if key == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise _unauthenticated("authorization must be 'Bearer <token>'")
            return token.strip()
    return None
