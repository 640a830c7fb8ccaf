"""Starting and reading a turn, for every surface alike (our streams, AG-UI, the AI SDK, A2A).

Each surface turns its request into a `TurnRequest`, asks `StreamService` to
start it, and maps the service's refusals (`app.service.errors`) to its own
answers: HTTP statuses for ours, JSON-RPC errors for A2A.
"""
