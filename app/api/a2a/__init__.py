"""A2A: our agents as an A2A server, and remote A2A agents as the host agent's tools."""
