"""A user's preferences (`/account/preferences`), kept by the service for all their devices.

Through the HTTP app on SQLite and on PostgreSQL: each user reads and changes
their own only, a model the catalog does not offer is refused as a stream
refuses it, and a model taken out of the catalog since is no longer offered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import Backend, running_service, settings_for

ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}


def strong(fake_llm: FakeOpenAI) -> str:
    """`MODELS` with a second model beside the default."""
    entry = {
        "id": "strong",
        "label": "Strong",
        "provider": "openai",
        "baseUrl": fake_llm.base_url,
        "apiKey": "sk-strong",
        "model": "strong-model",
    }
    return orjson.dumps([entry]).decode()


async def test_a_users_model_is_kept_for_them_alone(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    keys = "key-alice:alice,key-bob:bob"
    settings = settings_for(backend, tmp_path, fake_llm, api_keys=keys, models=strong(fake_llm))
    async with running_service(settings) as client:

        async def preferences(headers: dict[str, str], **change: Any) -> tuple[int, Any]:
            if change:
                response = await client.patch("/account/preferences", json=change, headers=headers)
            else:
                response = await client.get("/account/preferences", headers=headers)
            return response.status_code, response.json()["data"]

        never_chosen = await preferences(ALICE)
        chosen = await preferences(ALICE, model="strong")
        bobs = await preferences(BOB)
        bob_chooses = await preferences(BOB, model="default")
        alices = await preferences(ALICE)
        unknown = await client.patch("/account/preferences", json={"model": "nope"}, headers=ALICE)
        not_text = await client.patch("/account/preferences", json={"model": 7}, headers=ALICE)
        anonymous = await client.get("/account/preferences")
        still = await preferences(ALICE)
        cleared = await preferences(BOB, model=None)
        bob_after = await preferences(BOB)

    assert never_chosen == (200, {"model": None})
    assert chosen == (200, {"model": "strong"})
    # Alice's choice is hers: Bob has none until he chooses, and his leaves hers as it was.
    assert bobs == (200, {"model": None})
    assert bob_chooses == (200, {"model": "default"})
    assert alices == (200, {"model": "strong"})
    assert unknown.status_code == 400
    assert unknown.json()["data"] == {"error": "MODEL_UNKNOWN"}
    assert not_text.status_code == 422
    assert anonymous.status_code == 401
    assert still == (200, {"model": "strong"})
    assert cleared == (200, {"model": None})
    assert bob_after == (200, {"model": None})


async def test_a_model_no_longer_offered_is_not_offered_first(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(
        settings_for(backend, tmp_path, fake_llm, models=strong(fake_llm))
    ) as client:
        chosen = await client.patch("/account/preferences", json={"model": "strong"})
    # The service again, with its catalog cut to the default model.
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        after = await client.get("/account/preferences")

    assert chosen.json()["data"] == {"model": "strong"}
    assert after.json()["data"] == {"model": None}
