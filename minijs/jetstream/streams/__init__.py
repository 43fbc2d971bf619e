"""The stream wing: a stream, its publish pipeline and what rides on it (atomic and fast
batches, counters, message schedules, message-trace events)."""
