"""Credentials: nkeys (ed25519 keys in NATS's encoding), JWTs, nkey users' signatures, and
passwords as nats-server compares them. A floor below the connections that check them; operator
mode, which builds accounts from JWTs, is :mod:`minijs.operatormode`, and the config-file keys of
nkey users and operators are read by :mod:`minijs.confauth`.

Nothing of the nkey and JWT part is imported by a server that has neither ``nkey`` users nor an
``operator``: the ed25519 library (``pip install 'minijs[nkeys]'``) is needed only then.
"""
