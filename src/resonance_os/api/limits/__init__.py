"""Request allowances held in memory: per-API-key rate limits and per-address limits."""
