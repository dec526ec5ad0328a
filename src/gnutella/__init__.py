"""The Gnutella packet router (thesis 6.2).

The protocol layer has no I/O and is tested on its own:

- ``descriptors``: the descriptor (message) formats, parsed lazily, and their encoders
- ``parser``: ``DescriptorParser``, the byte stream of one connection cut into descriptors
- ``extensions``: GGEP blocks and the HUGE/GGEP/XML extension areas inside payloads
- ``handshake``: the 0.6 (and 0.4) connection handshake in both roles, as a state machine
- ``headers``: handshake header blocks and what the router needs from them (``PeerInfo``)
- ``compression``: deflate of a connection's two directions once negotiated
- ``errors``: ``ProtocolError``, raised for input that costs its connection
- ``routing``: where each descriptor goes (``Routes``) and the bounded tables that remember paths

The service is built on it and on seda's public API (docs/gnutella.md):

- ``server``, ``router``, ``catcher``: the three stages (GnutellaServer, GnutellaRouter,
  GnutellaCatcher) and ``events``, what they send each other
- ``peer``: one connection's state; ``neighbours``: the connections the router sends to
- ``hostcache``: the hosts we may dial, kept in a file; ``addresses``: ``HOST:PORT``
- ``options``: the configuration; ``service``: ``build``, the stages on a runtime
- ``cli``: the ``gnutella`` command (``python -m gnutella``)
"""
