"""Errors of the model layer. Adapters translate httpx2 and vendor errors into these.

    ModelError                 base: callers catch this
    ├── ModelNotConfigured     no provider endpoint or key is set
    ├── ModelHTTPError         the provider answered an error status (carries status, Retry-After)
    ├── ModelConnectionError   could not connect, or the connection dropped
    ├── ModelTimeout           no chunk within the configured timeout
    └── ModelResponseError     the stream was malformed or reported an error in-band
        ├── ModelContentBlocked  the provider's safety filter refused the prompt or the answer
        └── ModelOutputInvalid   a structured answer did not validate, twice (deep research)

Each carries a stable `code`; the user-facing text for a code comes from
`USER_MESSAGES`, never from the provider, except where the error says more
in our own words (`user_text`: a structured step names itself and why).
What someone needs to diagnose the failure (which provider, model and URL
were called, the status, the upstream's own message, bounded and with the
key scrubbed, and a hint where the cause is a known mistake) is in
`describe()`: the error event's `detail` and the log line of the failed call.
"""

from __future__ import annotations


class ModelError(Exception):
    code = "LLM_ERROR"
    retryable = False

    def __init__(self, detail: str = "") -> None:
        super().__init__(detail or self.code)
        self.detail = detail
        self.url = ""
        """What was called: scheme, host and path only (no query string, no user info)."""
        self.hint = ""
        """A likely cause and its fix, when the adapter recognises one."""

    @property
    def user_text(self) -> str:
        """The sentence the user reads: the fixed one of its code."""
        return user_message(self.code)

    def describe(self) -> str:
        """What failed where, for the log and the error event's `detail` (never the key)."""
        where = f" calling {self.url}" if self.url else ""
        text = f"{type(self).__name__}{where}: {self.detail or self.code}"
        return f"{text}. {self.hint}" if self.hint else text


class ModelNotConfigured(ModelError):
    code = "LLM_NOT_CONFIGURED"


class ModelHTTPError(ModelError):
    def __init__(self, status: int, detail: str = "", retry_after: float | None = None) -> None:
        super().__init__(detail or f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after

    @property
    def code(self) -> str:  # type: ignore[override]
        if self.status == 429:
            return "LLM_RATE_LIMITED"
        if self.status in (401, 403):
            return "LLM_AUTH_FAILED"
        if self.status >= 500:
            return "LLM_UNAVAILABLE"
        return "LLM_BAD_REQUEST"

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        return self.status in (408, 409, 429) or self.status >= 500


class ModelConnectionError(ModelError):
    code = "LLM_UNAVAILABLE"
    retryable = True


class ModelTimeout(ModelError):
    code = "LLM_TIMEOUT"
    retryable = True


class ModelResponseError(ModelError):
    code = "LLM_BAD_RESPONSE"


class ModelContentBlocked(ModelResponseError):
    """Asking again gets the same refusal, so it is never retried."""

    code = "LLM_CONTENT_BLOCKED"


class ModelOutputInvalid(ModelResponseError):
    """A structured answer failed validation, and so did the one asked for again."""

    code = "LLM_INVALID_OUTPUT"


USER_MESSAGES: dict[str, str] = {
    "LLM_NOT_CONFIGURED": "No language model is configured: set LLM_BASE_URL / LLM_API_KEY.",
    "LLM_RATE_LIMITED": "The language model is rate limited; please try again shortly.",
    "LLM_AUTH_FAILED": "The language model rejected the service's credentials.",
    "LLM_UNAVAILABLE": "The language model is unavailable right now.",
    "LLM_BAD_REQUEST": "The language model rejected the request.",
    "LLM_TIMEOUT": "The language model did not answer in time.",
    "LLM_BAD_RESPONSE": "The language model sent a response that could not be read.",
    "LLM_CONTENT_BLOCKED": "The language model's safety filter blocked this request or answer.",
    "LLM_INVALID_OUTPUT": "The language model's answer did not have the expected form, twice.",
    "LLM_ERROR": "The language model failed.",
    "RETRYING": "The language model call failed; retrying.",
    "PPT_INVALID_PLAN": (
        "The model's plan for the deck was still invalid after a retry; the build is kept"
        " as failed at that step. Say “retry” to try it again."
    ),
    "PPT_RENDER_FAILED": "The deck could not be drawn. Say “retry” to try again.",
    "PPT_TEMPLATE_UNUSABLE": "The deck cannot be built on this template.",
    "PPT_RENDER_TIMEOUT": (
        "Drawing the deck took longer than its time limit. Say “retry” to try again."
    ),
    "STORE_FAILED": (
        "The answer could not be saved: the database stayed unreachable. Please ask again."
    ),
    "INTERNAL_ERROR": "The service failed while answering.",
}


def user_message(code: str) -> str:
    return USER_MESSAGES.get(code, USER_MESSAGES["INTERNAL_ERROR"])


def stored_error_message(code: str | None, message: str | None) -> str | None:
    """What a stored turn's stream said in `error.message`: `message`, as it was kept; for a
    turn stored before it was, its code's fixed text (or the text stored before codes, as it
    is). Every reader of a stored turn shows this, so a reload says what the stream said."""
    if message or not code:
        return message
    return USER_MESSAGES.get(code, code)
