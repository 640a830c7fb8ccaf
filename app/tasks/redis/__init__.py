"""Everything the service keeps in Redis, one role a module.

`target` says which Redis (one server, Sentinels, a Cluster) and `client`
connects to it; `batch` sends concurrent turns' commands as one pipeline;
`shared` is the key scheme the task roles share. The roles: `claims`,
`queue`, `board`, `instances` and `liveness` (the dead-instance sweep),
`log` (run logs as Streams) and `unstored` (kept outcomes). `backend`
builds the task roles (`redis_tasks`). Nothing is imported here, so naming
`target` alone does not load the rest.
"""
