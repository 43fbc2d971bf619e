"""The ``$JS.API`` wing: request dispatch, the stream and consumer endpoints, message gets,
snapshots and restores. Handlers decode a request, call the engine, and encode the reply or
the error from the one error table; no state of their own beyond a request in flight."""
