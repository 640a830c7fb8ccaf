"""Deep research in a conversation you can correct: a regeneration reuses the research, a
branch resumes only its own paused research (over A2A and AG-UI too), and a deleted branch
takes its checkpoints.

The model is the scripted `Researcher` (it counts its calls by step), web search the Tavily
fake over HTTP (it records every query); the app is the real one on each backend.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import orjson
from a2a.types.a2a_pb2 import GetTaskRequest, ListTasksRequest

from app.agents.deep.checkpoints import (
    copy_checkpoint,
    delete_threads,
    open_checkpointer,
    thread_config,
    thread_id,
    turn_thread,
)
from app.core.run import ConversationKey
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import Backend, history
from tests.integration.test_ag_ui import read_ag_ui
from tests.integration.test_deep_research import (
    INDEPENDENT,
    QUESTION,
    deep_settings,
    of_type,
    research_service,
)
from tests.support.a2a import a2a_client, answer_of, message, state_name, states
from tests.support.research import REPORT, Researcher
from tests.support.sse import Event, collect, text_of

PLAN = orjson.dumps(INDEPENDENT).decode()
ASKED = "Which region and which years?"
EDITED = "What do heat pumps cost in Japan?"


async def deep(client: httpx.AsyncClient, conversation: str, **fields: Any) -> list[Event]:
    """One whole deep-research turn with the given stream fields."""
    params = {"conversationId": conversation, **{k: str(v) for k, v in fields.items()}}
    async with client.stream("GET", "/agent/deep/stream", params=params) as response:
        assert response.status_code == 200, await response.aread()
        return await collect(response)


def report_prompt(researcher: Researcher, n: int) -> str:
    return researcher.requests["report"][n].messages[-1].text_content()


async def test_regenerating_a_finished_research_writes_only_a_new_report(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(PLAN)
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as client:
        first = await deep(client, "c-regen", query=QUESTION)
        calls, searches = Counter(researcher.calls), list(fake_search.queries)
        again = await deep(client, "c-regen", regenerate=first[0]["sessionId"])
        after_again = Counter(researcher.calls)
        # The regenerated turn keeps the research too: regenerating it reuses it again.
        third = await deep(client, "c-regen", regenerate=again[0]["sessionId"])
        stored = await history(client, "c-regen")

    original, regenerated, newest = (t[0]["sessionId"] for t in (first, again, third))
    assert [t[-1]["status"] for t in (first, again, third)] == ["completed"] * 3
    # Only the report was written again: no clarify, brief, plan, task or critique call, and
    # no search.
    assert after_again - calls == Counter({"report": 1})
    assert researcher.calls - after_again == Counter({"report": 1})
    assert fake_search.queries == searches
    assert text_of(again) == REPORT
    assert "Writing the report again from the finished research." in text_of(again, "thinking")
    # From the same findings and sources as the first report.
    assert report_prompt(researcher, 1) == report_prompt(researcher, 0)
    # A new sibling of the first turn, with the plan and the references of the research.
    [turn] = stored
    assert (turn["id"], turn["parentId"]) == (newest, None)
    assert turn["siblings"] == [original, regenerated, newest]
    [round_1] = turn["plan"]
    assert [(t["id"], t["status"]) for t in round_1["tasks"]] == [
        ("1.1", "completed"),
        ("1.2", "completed"),
    ]
    assert round_1["critique"] == {"passed": True, "feedback": ""}
    [reference] = of_type(first, "reference")
    assert turn["reference"] == orjson.loads(reference["content"])
    assert [p["type"] for p in of_type(again, "plan")] == ["plan"]


async def test_regenerating_an_unfinished_research_researches_again(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(PLAN, clarify=ASKED)
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as client:
        paused = await deep(client, "c-unfinished", query=QUESTION)
        again = await deep(client, "c-unfinished", regenerate=paused[0]["sessionId"])

    # Nothing finished to reuse: the question is read again, and asked about again.
    assert [t[-1]["status"] for t in (paused, again)] == ["paused", "paused"]
    assert researcher.calls["clarify"] == 2
    assert text_of(again) == ASKED


async def test_a_paused_research_is_answered_only_on_its_own_branch(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(PLAN, PLAN, clarify=ASKED)
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as client:
        first = await deep(client, "c-branch", query=QUESTION)
        # The question edited: a new research of its own, not the answer to the first.
        edited = await deep(client, "c-branch", query=EDITED, parentId=0)
        listed_edited = (await client.get("/agent/runs")).json()["data"]
        first_id, edited_id = first[0]["sessionId"], edited[0]["sessionId"]
        switched = await client.post("/session/c-branch/active", json={"turnId": first_id})
        listed_first = (await client.get("/agent/runs")).json()["data"]
        # A plain message answers the active leaf: the first question, switched back to.
        europe = await deep(client, "c-branch", query="Europe, 2020 to 2024")
        asia = await deep(client, "c-branch", query="Asia, this year", parentId=edited_id)
        stored = await history(client, "c-branch")

    assert [t[-1]["status"] for t in (first, edited)] == ["paused", "paused"]
    assert text_of(edited) == ASKED
    assert researcher.calls["clarify"] == 2
    assert [(r["status"], r["sessionId"]) for r in listed_edited] == [("paused", edited_id)]
    assert switched.status_code == 200
    assert [(r["status"], r["sessionId"]) for r in listed_first] == [("paused", first_id)]
    assert [t[-1]["status"] for t in (europe, asia)] == ["completed", "completed"]
    assert researcher.calls["clarify"] == 2  # both answers resumed, neither started anew
    europe_report, asia_report = report_prompt(researcher, 0), report_prompt(researcher, 1)
    assert f"Question: {QUESTION}" in europe_report
    assert "The user answered:\nEurope, 2020 to 2024" in europe_report
    assert EDITED not in europe_report
    assert f"Question: {EDITED}" in asia_report
    assert "The user answered:\nAsia, this year" in asia_report
    assert QUESTION not in asia_report
    assert "Europe" not in asia_report
    # The report's memory is its own branch: the edited question and what was asked of it.
    asia_memory = [m.text_content() for m in researcher.requests["report"][1].messages[1:-1]]
    assert asia_memory == [EDITED, ASKED]
    assert [(t["question"], t["status"]) for t in stored] == [
        (EDITED, "paused"),
        ("Asia, this year", "completed"),
    ]


async def test_deleting_a_branch_deletes_its_checkpoints_and_keeps_the_others(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(PLAN, PLAN, clarify=ASKED)
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as client:
        kept = (await deep(client, "c-prune", query=QUESTION))[0]["sessionId"]
        edited = (await deep(client, "c-prune", query=EDITED, parentId=0))[0]["sessionId"]
        answer = (await deep(client, "c-prune", query="Asia", parentId=edited))[0]["sessionId"]
        key = ConversationKey("local", "c-prune")
        async with open_checkpointer(settings.database_url) as saver:
            threads = {t: thread_config(turn_thread(key, t)) for t in (kept, edited, answer)}
            before = {t: await saver.aget_tuple(c) is not None for t, c in threads.items()}
            deleted = await client.delete(f"/session/c-prune/turns/{edited}")
            after = {t: await saver.aget_tuple(c) is not None for t, c in threads.items()}
            # The branch left answers still: its research is whole.
            answered = await deep(client, "c-prune", query="Europe", parentId=kept)
            threads[answered[0]["sessionId"]] = thread_config(
                turn_thread(key, answered[0]["sessionId"])
            )
            gone = await client.delete("/session/c-prune")
            at_the_end = {t: await saver.aget_tuple(c) is not None for t, c in threads.items()}

    assert before == {kept: True, edited: True, answer: True}
    assert deleted.json()["data"]["deleted"] == 2
    assert after == {kept: True, edited: False, answer: False}
    assert answered[-1]["status"] == "completed"
    assert gone.status_code == 200
    assert not any(at_the_end.values())


async def test_a_research_paused_before_threads_were_per_turn_is_answered_on_its_branch(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(PLAN, PLAN, clarify=ASKED)
    settings = deep_settings(backend, tmp_path, fake_search)
    key = ConversationKey("local", "c-legacy")
    async with research_service(settings, researcher) as client:
        paused = (await deep(client, "c-legacy", query=QUESTION))[0]["sessionId"]
        edited = (await deep(client, "c-legacy", query=EDITED, parentId=0))[0]["sessionId"]
        async with open_checkpointer(settings.database_url) as saver:
            # As an earlier version left them: the newest research (the first question's,
            # here) in the conversation's one thread, and no thread of the turns' own.
            own = turn_thread(key, paused)
            assert await copy_checkpoint(saver, thread_config(own), thread_id(key), writes=True)
            await delete_threads(saver, [own, turn_thread(key, edited)])
        # The edited question's branch: the research kept is not its own, so it starts anew.
        other = await deep(client, "c-legacy", query="Asia", parentId=edited)
        answered = await deep(client, "c-legacy", query="Europe, 2020 to 2024", parentId=paused)

    assert (other[-1]["status"], text_of(other)) == ("paused", ASKED)
    assert researcher.calls["clarify"] == 3
    assert answered[-1]["status"] == "completed"
    assert "The user answered:\nEurope, 2020 to 2024" in report_prompt(researcher, 0)


async def test_an_a2a_task_waiting_for_input_is_answered_on_its_own_branch(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(PLAN, PLAN, clarify=ASKED)
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as service, a2a_client(service) as client:
        paused = [r async for r in client.send_message(message(QUESTION, "c-a2a", skill="deep"))]
        task_id = paused[0].task.id
        # Beside it, over the plain stream: the question edited, which asks again and is active.
        edited = await deep(service, "c-a2a", query=EDITED, parentId=0)
        answered = [
            r async for r in client.send_message(message("Europe", "c-a2a", task_id=task_id))
        ]
        done = await client.get_task(GetTaskRequest(id=task_id))
        listed = await client.list_tasks(ListTasksRequest(context_id="c-a2a"))
        stored = (await service.get("/session/c-a2a/export", params={"format": "json"})).json()

    assert states(answered) == ["working", "completed"]
    assert answer_of(answered) == REPORT
    assert researcher.calls["clarify"] == 2
    assert "The user answered:\nEurope" in report_prompt(researcher, 0)
    assert EDITED not in report_prompt(researcher, 0)
    assert [part.text for m in done.history for part in m.parts if part.text] == [
        QUESTION,
        ASKED,
        "Europe",
    ]
    # Two tasks: the first with its answer, and the edit still waiting for its own.
    assert [(t.id, state_name(t.status.state)) for t in listed.tasks] == [
        (task_id, "completed"),
        (f"c-a2a.{edited[0]['sessionId']}", "input_required"),
    ]
    parents = {m["question"]: m["parentId"] for m in stored["messages"]}
    assert parents["Europe"] == int(task_id.split(".")[1])


async def ag_ui_run(client: httpx.AsyncClient, run_id: str, **run: Any) -> list[dict[str, Any]]:
    """One AG-UI run on thread `c-ag-ui`, read to its end."""
    body = {"threadId": "c-ag-ui", "runId": run_id, **run}
    async with client.stream("POST", "/ag-ui/deep", json=body) as response:
        assert response.status_code == 200, await response.aread()
        events, _ = await read_ag_ui(response, "RUN_FINISHED")
    return events


async def test_an_ag_ui_interrupt_answered_with_its_turn_as_parent_resumes_that_branch(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(PLAN, PLAN, clarify=ASKED)
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as client:
        question = [{"id": "u-1", "role": "user", "content": QUESTION}]
        paused = await ag_ui_run(client, "r-1", messages=question)
        [interrupt] = paused[-1]["outcome"]["interrupts"]
        turn_id = paused[0]["metadata"]["sessionId"]
        # Beside it, over the plain stream: the question edited, which asks again and is active.
        await deep(client, "c-ag-ui", query=EDITED, parentId=0)
        answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": "Europe"}
        answered = await ag_ui_run(
            client,
            "r-2",
            messages=question,
            resume=[answer],
            forwardedProps={"parentId": turn_id},
        )
        stored = (await client.get("/session/c-ag-ui")).json()["data"]["messages"]

    assert answered[-1]["outcome"]["type"] == "success"
    assert researcher.calls["clarify"] == 2
    assert "The user answered:\nEurope" in report_prompt(researcher, 0)
    assert EDITED not in report_prompt(researcher, 0)
    assert [(m["question"], m["parentId"]) for m in stored] == [
        (QUESTION, None),
        ("Europe", turn_id),
    ]
