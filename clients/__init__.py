"""rummy-referee's clients: the friendly ``View`` value bots receive, and the bot brains (``clients.bots``).

The gRPC SDK, the bot runner and the tools join this package; they may import the generated ``rummy_pb`` code and
``engine`` helpers, never ``server``.
"""
