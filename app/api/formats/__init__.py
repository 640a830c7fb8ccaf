"""The front-end wire formats other than ours: AG-UI and the AI SDK UI message stream.

Each is a thin encoder over a run's log (`base.TranslatedLog`): the turn is
started, stopped and resumed exactly as our own stream's is (`app.service.streams`,
`/agent/stop`, `services.runs.reader`), so both formats inherit stop from any
instance and resume from the shared log without a line of their own.
"""
