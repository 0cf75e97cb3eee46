"""The a2a-sdk reference server (PyPI a2a-sdk[http-server], JSON-RPC
binding, A2A 1.0) around a trivial echo agent, for the tests of our A2A
client (crates/bridges/tests/a2a_client.rs).

    .venv/bin/python a2a/echo_server.py

Binds 127.0.0.1 on a free port, prints `READY http://127.0.0.1:<port>` on
stdout once it accepts connections, and serves until killed.

The agent: a message whose text starts with "slow" works until it is
canceled (at most 60 s); any other message completes with the artifact
"echo" holding "echo: <text>".
"""

import asyncio
import socket
import sys

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
)
from starlette.applications import Starlette

RPC_PATH = "/rpc"


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        text = context.get_user_input()
        if text.startswith("slow"):
            # Canceling the task cancels this coroutine; cancel() then
            # reports TASK_STATE_CANCELED.
            await asyncio.sleep(60)
        await updater.add_artifact([Part(text=f"echo: {text}")], artifact_id="echo", name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        task_id = task.id if task else context.task_id
        context_id = task.context_id if task else context.context_id
        await TaskUpdater(event_queue, task_id, context_id).cancel()


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="reference-echo",
        description="The a2a-sdk reference server with an echo agent.",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="echo", name="Echo", description="Echoes the text.", tags=["echo"])
        ],
        supported_interfaces=[
            AgentInterface(
                protocol_binding="JSONRPC", protocol_version="1.0", url=base + RPC_PATH
            )
        ],
    )
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(
        routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url=RPC_PATH)
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))

    async def serve() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if task.done():
                await task
                return
            await asyncio.sleep(0.02)
        print(f"READY {base}", flush=True)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    sys.exit(main())
