"""The service's side of other ecosystems' protocols: A2A, MCP, telemetry (traces, metrics)."""
