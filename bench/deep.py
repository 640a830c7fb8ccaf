"""What a deep research turn writes beside its two turn writes: LangGraph's checkpoints.

    .venv/bin/python -m bench.deep --database-url URL [--turns 30]

Runs whole deep research turns in this process (clarify, brief, a plan of
`--tasks` independent tasks, the tasks, a passing critique, the report), on
the scripted model of the tests and without web search, through the real
agent and the real turn store on `--database-url`. Each turn is run
twice over: once with the checkpoints in that database (LangGraph's SQLite
or Postgres saver, as the service opens them), once in LangGraph's in-memory
saver. Per turn it prints, as JSON, the checkpoint puts (one per super-step,
`durability="sync"`), the batches of task writes and the writes in them,
and the CPU milliseconds of a whole turn with each saver (this process's
clock: the model, the graph and the driver's side of every write); the
difference is what keeping the checkpoints in our database costs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import orjson
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from app.agents.deep.agent import DeepResearchAgent, DeepSettings, OpenCheckpointer
from app.agents.deep.checkpoints import open_checkpointer
from app.agents.turn import AgentCore, AgentSettings, Turn
from app.config import Settings
from app.core.run import ConversationKey, NeverStopped
from app.llm.tokens import TokenCounter, install_encodings
from app.store.db import Database
from app.store.turns import SqlTurnStore
from bench.procs import fast_event_loop
from tests.support.agents import document_library
from tests.support.research import Researcher
from tests.support.scripted_model import ScriptedModel

CALLS_PER_TASK = 1
"""Without web search a task is one model call."""
OTHER_CALLS = 5
"""clarify, brief, plan, critique, report."""


def _counted(
    counts: Counter[str], name: str, method: Callable[..., Coroutine[Any, Any, Any]]
) -> Callable[..., Coroutine[Any, Any, Any]]:
    async def call(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        if name == "write_batches":
            counts["writes"] += len(args[1])
        return await method(*args, **kwargs)

    return call


def _counting(opener: OpenCheckpointer, counts: Counter[str]) -> OpenCheckpointer:
    """The saver `opener` opens, its puts and write batches counted on the instance."""

    @contextlib.asynccontextmanager
    async def opened() -> AsyncIterator[BaseCheckpointSaver[str]]:
        async with opener() as saver:
            # Instrumentation on this instance only: the saver's own code runs unchanged.
            saver.aput = _counted(counts, "puts", saver.aput)  # type: ignore[method-assign]
            saver.aput_writes = _counted(  # type: ignore[method-assign]
                counts, "write_batches", saver.aput_writes
            )
            yield saver

    return opened


@contextlib.asynccontextmanager
async def _in_memory() -> AsyncIterator[BaseCheckpointSaver[str]]:
    yield InMemorySaver()


async def _turns(
    database_url: str, data_dir: Path, opener: OpenCheckpointer, turns: int, tasks: int
) -> tuple[float, Counter[str]]:
    """CPU ms per turn over `turns` sequential turns (after one to warm up), and the counts."""
    plan = orjson.dumps(
        {"tasks": [{"id": str(n), "title": f"Aspect {n}"} for n in range(tasks)]}
    ).decode()
    researcher = Researcher(*[plan] * (turns + 1))
    calls = (turns + 1) * (OTHER_CALLS + tasks * CALLS_PER_TASK)
    model = ScriptedModel(*[researcher.answer] * calls)
    counts: Counter[str] = Counter()
    install_encodings(data_dir / "tiktoken")
    async with (
        Database.open(database_url, pool_size=4, migrate=True) as db,
        httpx2.AsyncClient() as http,
    ):
        limits = dataclasses.replace(
            AgentSettings.defaults(), recommendations=False, partial_save_seconds=3600
        )
        library = document_library(db, Settings(data_dir=data_dir))
        core = AgentCore(model, SqlTurnStore(db), TokenCounter(), http, limits, library, db)
        agent = DeepResearchAgent(
            core,
            _counting(opener, counts),
            None,
            dataclasses.replace(DeepSettings.defaults(), max_parallel=tasks),
        )
        async with agent.resources():

            async def turn(number: int) -> None:
                key = ConversationKey("bench", f"deep-{number}-{time.monotonic_ns()}")
                turn = Turn(key, "How big is the heat pump market?", f"task-{number}")
                await agent.begin(turn)
                program = agent.start(turn)
                async for _event in program.events(NeverStopped()):
                    pass
                conclusion = await program.conclude(None, lambda _notice: None)
                assert conclusion.complete.status == "completed", conclusion

            await turn(-1)
            counts.clear()
            start = time.process_time()
            for number in range(turns):
                await turn(number)
            cpu_ms = (time.process_time() - start) / turns * 1000
    return cpu_ms, counts


async def _main(args: argparse.Namespace) -> None:
    data_dir = Path(args.data_dir)
    database = partial(open_checkpointer, args.database_url)
    cpu_db, counts = await _turns(args.database_url, data_dir, database, args.turns, args.tasks)
    cpu_memory, _ = await _turns(args.database_url, data_dir, _in_memory, args.turns, args.tasks)
    puts = counts["puts"] / args.turns
    report = {
        "turns": args.turns,
        "tasks_per_turn": args.tasks,
        "checkpoint_puts_per_turn": puts,
        "write_batches_per_turn": counts["write_batches"] / args.turns,
        "writes_per_turn": counts["writes"] / args.turns,
        "turn_cpu_ms_checkpoints_in_database": round(cpu_db, 2),
        "turn_cpu_ms_checkpoints_in_memory": round(cpu_memory, 2),
        "checkpoint_cpu_ms_per_turn": round(cpu_db - cpu_memory, 2),
        "checkpoint_cpu_ms_per_put": round(
            (cpu_db - cpu_memory) / (counts["puts"] / args.turns), 3
        ),
    }
    print(json.dumps(report))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--data-dir", default="./data", help="where tiktoken's files are")
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--tasks", type=int, default=3)
    fast_event_loop(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
