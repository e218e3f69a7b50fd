"""The one translation between the protobuf messages (``rummy_pb``) and engine types, both directions.

The server and the SDK both go through it, so both sides read and refuse the same messages the same way. It
imports only ``engine`` and ``rummy_pb`` and keeps no caches (the server keeps its own, ``server.codec``).
"""
