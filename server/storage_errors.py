"""The storage port's failures, apart from any adapter: what ``server.errors`` maps to statuses (STORAGE_UNAVAILABLE,
STORAGE_BUSY, COMMIT_OUTCOME_UNKNOWN), raised by the Redis adapter (server/store.py) and any other implementation
of ``server.ports.GameStorage``."""

from __future__ import annotations


class StoreUnavailable(Exception):
    """The storage cannot be reached (or cannot serve right now): the request may be retried later. For a commit:
    it was not applied, and will not be."""


class CommitOutcomeUnknown(StoreUnavailable):
    """A commit was sent but neither its answer nor a later check came: it may or may not have been applied
    (never after this: its fence has passed). Resend the request with the same request_id to learn which."""


class StoreBusy(StoreUnavailable):
    """The storage is reachable, but every connection of this process to it is busy: retry a little later."""
