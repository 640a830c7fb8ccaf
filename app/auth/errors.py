"""What sign-in refuses, apart from the parts that raise it, so that importing them stays cheap.

NotAuthenticated     no (valid) credential: 401 + `WWW-Authenticate`
InvalidToken         an OIDC token that fails a check (logged; the client gets 401)
IssuerUnreachable    the identity provider's discovery or keys could not be read: 503
"""

from __future__ import annotations


class NotAuthenticated(Exception):
    def __init__(self, message: str, *, invalid: bool) -> None:
        super().__init__(message)
        self.challenge = 'Bearer error="invalid_token"' if invalid else "Bearer"


class InvalidToken(Exception):
    """`str()` says why, for the log; the client is told only that the token is invalid."""


class IssuerUnreachable(Exception):
    pass
