"""Authentication by public keys: nkeys (ed25519 keys in NATS's encoding) and the JWTs of
operator mode, with the resolver that holds account JWTs.

Nothing here is imported by a server that has neither ``nkey`` users nor an ``operator``: the
ed25519 library (``pip install 'minijs[nkeys]'``) is needed only then.
"""
