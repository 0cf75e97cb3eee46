"""Drives an A2A 1.0 server with the official Python client (PyPI a2a-sdk,
pinned in requirements.txt, installed in tests/bridges/.venv) and prints one
JSON report on stdout.

    [BRIDGE_TEST_TOKEN=<token>] .venv/bin/python a2a/client.py <scenario> <base-url>

The scenarios and the report format are those of client.mjs, so the Rust
tests assert the same things of both clients. Anything unexpected raises:
the process exits non-zero and the Rust test shows stderr.

Auth: with BRIDGE_TEST_TOKEN set, the clients carry the SDK's own
AuthInterceptor with a CredentialService that knows the token; the
interceptor reads the card's securityRequirements/securitySchemes and, for
an HTTP Bearer scheme, sends `Authorization: Bearer <token>`. The card is
fetched without it (it is public). The report's `statuses` lists the HTTP
status of every response the client got.

Beyond the SDK: a JSON-RPC answer whose id is not its request's, and a task
state the spec does not define, fail the script (the SDK accepts both).
crates/bridges/tests/checker_a2a.rs shows these checks fail on a broken
exchange.
"""

import asyncio
import base64
import json
import os
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP
from google.protobuf.json_format import MessageToDict


def user_message(text, task_id=None, context_id=None):
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )


def parts_text(parts):
    return "\n".join(p.text for p in parts if p.WhichOneof("content") == "text")


def parts_data(parts):
    return [
        MessageToDict(p.data) if p.data.WhichOneof("kind") == "struct_value" else None
        for p in parts
        if p.WhichOneof("content") == "data"
    ]


def parts_files(parts):
    out = []
    for p in parts:
        kind = p.WhichOneof("content")
        if kind in ("raw", "url"):
            out.append(
                {
                    "kind": kind,
                    "value": base64.b64encode(p.raw).decode() if kind == "raw" else p.url,
                    "mediaType": p.media_type,
                    "filename": p.filename,
                }
            )
    return out


def artifact_detail(a):
    return {
        "id": a.artifact_id,
        "name": a.name,
        "text": parts_text(a.parts),
        "data": parts_data(a.parts),
        "files": parts_files(a.parts),
    }


def state_name(state):
    # The SDK parses leniently: an unknown state string becomes
    # TASK_STATE_UNSPECIFIED without complaint. Refuse it here instead.
    if state == TaskState.TASK_STATE_UNSPECIFIED:
        raise RuntimeError("invalid task state: unknown or unspecified")
    return TaskState.Name(state)


def summary(task):
    return {
        "id": task.id,
        "contextId": task.context_id,
        "state": state_name(task.status.state),
        "statusText": parts_text(task.status.message.parts),
        "artifactIds": [a.artifact_id for a in task.artifacts],
        "artifactText": "".join(parts_text(a.parts) for a in task.artifacts),
        "historyLength": len(task.history),
        "metadata": MessageToDict(task.metadata) if task.HasField("metadata") else None,
        "artifacts": [artifact_detail(a) for a in task.artifacts],
    }


def event(ev):
    kind = ev.WhichOneof("payload")
    if kind == "task":
        return {"kind": "task", "id": ev.task.id, "state": state_name(ev.task.status.state)}
    if kind == "status_update":
        u = ev.status_update
        return {
            "kind": "statusUpdate",
            "taskId": u.task_id,
            "state": state_name(u.status.state),
            "text": parts_text(u.status.message.parts),
            "data": parts_data(u.status.message.parts),
        }
    if kind == "artifact_update":
        u = ev.artifact_update
        return {
            "kind": "artifactUpdate",
            "taskId": u.task_id,
            "artifactId": u.artifact.artifact_id,
            "text": parts_text(u.artifact.parts),
            "data": parts_data(u.artifact.parts),
            "files": parts_files(u.artifact.parts),
            "append": u.append,
            "lastChunk": u.last_chunk,
        }
    if kind == "message":
        return {"kind": "message", "text": parts_text(ev.message.parts)}
    raise RuntimeError(f"unexpected stream item: {ev}")


async def collect(aiter):
    return [event(ev) async for ev in aiter]


async def failure(awaitable):
    try:
        await awaitable
    except Exception as err:  # noqa: BLE001 - the report names the type
        return {
            "error": type(err).__name__,
            "code": JSON_RPC_ERROR_CODE_MAP.get(type(err)),
            "message": str(err),
        }
    raise RuntimeError("expected the call to fail")


async def only_task(aiter):
    """The task of a non-streaming send (the client yields exactly one item)."""
    items = [ev async for ev in aiter]
    if len(items) != 1 or items[0].WhichOneof("payload") != "task":
        raise RuntimeError(f"SendMessage returned no single task: {items}")
    return items[0].task


async def check_rpc_id(response):
    """A JSON-RPC answer (not an SSE stream) must carry its request's id:
    the SDK does not check it."""
    if response.request.method != "POST" or not response.headers.get(
        "content-type", ""
    ).startswith("application/json"):
        return
    sent = json.loads(response.request.content or b"null")
    await response.aread()
    got = response.json()
    answer = isinstance(got, dict) and "jsonrpc" in got
    if answer and isinstance(sent, dict) and "id" in sent:
        if got.get("id") != sent["id"]:
            raise RuntimeError(
                f"JSON-RPC response id mismatch: expected {sent['id']!r}, got {got.get('id')!r}"
            )


class TokenCredentials(CredentialService):
    """The server token, for whichever scheme the card requires."""

    def __init__(self, token):
        self._token = token

    async def get_credentials(self, security_scheme_name, context):
        return self._token


def security(card):
    schemes = {
        name: scheme.http_auth_security_scheme.scheme
        if scheme.HasField("http_auth_security_scheme")
        else scheme.WhichOneof("scheme")
        for name, scheme in card.security_schemes.items()
    }
    requirements = [sorted(r.schemes.keys()) for r in card.security_requirements]
    return {"schemes": schemes, "requirements": requirements}


def send_request(text, return_immediately=False):
    return SendMessageRequest(
        message=user_message(text),
        configuration=SendMessageConfiguration(return_immediately=return_immediately),
    )


async def main(scenario, base_url, statuses):
    async def record(response):
        statuses.append(response.status_code)
        await check_rpc_id(response)

    token = os.environ.get("BRIDGE_TEST_TOKEN")
    interceptors = [AuthInterceptor(TokenCredentials(token))] if token else []
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(60.0), event_hooks={"response": [record]}
    ) as http:
        streaming = await ClientFactory(
            ClientConfig(streaming=True, httpx_client=http)
        ).create_from_url(base_url, interceptors=interceptors)
        blocking = await ClientFactory(
            ClientConfig(streaming=False, httpx_client=http)
        ).create_from_url(base_url, interceptors=interceptors)

        if scenario == "card":
            card = await A2ACardResolver(http, base_url).get_agent_card()
            iface = card.supported_interfaces[0]
            return {
                "name": card.name,
                "streaming": card.capabilities.streaming,
                "binding": iface.protocol_binding,
                "protocolVersion": iface.protocol_version,
                "url": iface.url,
                "skills": [s.id for s in card.skills],
                "clientVersion": http.headers.get("A2A-Version"),
                "security": security(card),
            }
        if scenario == "send":
            task = await only_task(blocking.send_message(send_request("hello there")))
            return {"task": summary(task)}
        if scenario == "stream":
            events = await collect(streaming.send_message(send_request("hello there")))
            return {"events": events}
        if scenario == "get":
            task = await only_task(blocking.send_message(send_request("hello")))
            got = await streaming.get_task(GetTaskRequest(id=task.id, history_length=1))
            missing = await failure(streaming.get_task(GetTaskRequest(id="no-such-task")))
            return {"sent": summary(task), "got": summary(got), "missing": missing}
        if scenario == "cancel":
            started = await only_task(
                blocking.send_message(send_request("hang until canceled", return_immediately=True))
            )
            canceled = await streaming.cancel_task(CancelTaskRequest(id=started.id))
            got = await streaming.get_task(GetTaskRequest(id=started.id))
            again = await failure(streaming.cancel_task(CancelTaskRequest(id=started.id)))
            return {
                "started": summary(started),
                "canceled": summary(canceled),
                "got": summary(got),
                "again": again,
            }
        if scenario == "subscribe":
            # The task parks on an approval, so it cannot finish before the
            # subscription starts; the answer is sent when the subscription
            # shows input-required, and the subscription is read to the end.
            started = await only_task(
                blocking.send_message(
                    send_request("approve via a subscription", return_immediately=True)
                )
            )
            events = []
            answer = None
            async for raw in streaming.subscribe(SubscribeToTaskRequest(id=started.id)):
                ev = event(raw)
                events.append(ev)
                if answer is None and ev.get("state") == "TASK_STATE_INPUT_REQUIRED":
                    answer = await only_task(
                        blocking.send_message(
                            SendMessageRequest(message=user_message("approve", task_id=started.id))
                        )
                    )
            after = await failure(
                collect(streaming.subscribe(SubscribeToTaskRequest(id=started.id)))
            )
            return {
                "started": summary(started),
                "events": events,
                "answer": summary(answer) if answer is not None else None,
                "after": after,
            }
        if scenario == "input_required":
            first = await collect(streaming.send_message(send_request("approve a listing")))
            asked = first[-1]
            if asked.get("state") != "TASK_STATE_INPUT_REQUIRED":
                raise RuntimeError(f"the first stream did not end input-required: {first}")
            task_id = asked["taskId"]
            task = await streaming.get_task(GetTaskRequest(id=task_id))
            second = await collect(
                streaming.send_message(
                    SendMessageRequest(
                        message=user_message("approve", task_id=task_id, context_id=task.context_id)
                    )
                )
            )
            final = await streaming.get_task(GetTaskRequest(id=task_id))
            return {
                "first": first,
                "question": {"text": asked["text"], "data": asked["data"]},
                "second": second,
                "final": summary(final),
            }
        if scenario == "refused":
            # Without the token: a send and a streaming send, each refused.
            send = await failure(only_task(blocking.send_message(send_request("hello there"))))
            stream = await failure(collect(streaming.send_message(send_request("hello there"))))
            return {"send": send, "stream": stream}
        if scenario == "observe":
            # A run with a todo list, a subagent (with a child tool call),
            # capability invocations and an image; then the task as GetTask
            # shows it.
            events = await collect(streaming.send_message(send_request("observe the change")))
            final = await streaming.get_task(GetTaskRequest(id=events[0]["id"]))
            return {"events": events, "final": summary(final)}
        raise RuntimeError(f"unknown scenario {scenario}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: client.py <scenario> <base-url>")
    statuses = []
    report = asyncio.run(main(sys.argv[1], sys.argv[2], statuses))
    sys.stdout.write(json.dumps({**report, "statuses": statuses}))
