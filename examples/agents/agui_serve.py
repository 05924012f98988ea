"""Serves an ASGI app on 127.0.0.1 for the example agents: `--port N` (0 picks a free port).

Prints `listening on 127.0.0.1:N` (with the real port) to stdout once the socket accepts connections,
so a test can start the agent and wait for that one line.
"""

import argparse
import asyncio

import uvicorn

HOST = "127.0.0.1"


def port_from_args(description: str) -> int:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, default=8001, help="port on 127.0.0.1 (0: any free port)")
    return parser.parse_args().port


def serve(app, port: int) -> None:
    # No access log: stdout carries only the "listening" line; uvicorn's own log goes to stderr.
    config = uvicorn.Config(app, host=HOST, port=port, access_log=False, log_level="warning")
    server = uvicorn.Server(config)

    async def announce_when_started() -> None:
        while not server.started:
            await asyncio.sleep(0.01)
        bound = server.servers[0].sockets[0].getsockname()[1]
        print(f"listening on {HOST}:{bound}", flush=True)

    async def main() -> None:
        announcer = asyncio.create_task(announce_when_started())
        await server.serve()
        announcer.cancel()

    asyncio.run(main())
