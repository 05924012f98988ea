"""A deterministic pydantic-ai agent served over AG-UI, for trying and testing Glassbox's AG-UI client.

No language model, no network, no API key: the "model" is a pydantic-ai `FunctionModel` whose streaming
function plays a script chosen by the last user message (case-insensitive):

  weather   thinks, calls get_weather(city="Paris"), then answers "It is sunny in Paris, 21 °C."
  parallel  calls get_weather for Paris and for Oslo in one turn, then answers with both
  delete    calls delete_file(path="notes.txt"), a tool that needs approval: the run ends with an
            interrupt, and the client resumes it with `resume: [{interruptId, status, payload}]`
  sleep     calls slow_task(), which logs "started slow_task <tool_call_id>" and sleeps 60 s; if the
            client disconnects, the tool is cancelled and logs "cancelled slow_task <tool_call_id>"
            (log: stderr, and the file $GLASSBOX_AGENT_LOG if set)
  fail      the model raises an exception mid-stream: the stream ends with RUN_ERROR
  otherwise thinks, then answers "You said: <message>. (user messages seen: N)"

Run:  python pydantic_agent.py --port 8001      (POST AG-UI RunAgentInput to http://127.0.0.1:8001/)
"""

import asyncio
import os
import sys
from collections.abc import AsyncIterator

from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, DeltaToolCall, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agui_serve import port_from_args, serve

# A short pause between deltas, so a client really receives the answer in pieces.
DELTA_PAUSE_SECS = 0.02

# Part indices for the function model's deltas: a thinking part and tool calls must not share one.
THINKING, FIRST_TOOL = 0, 1

WEATHER = {"paris": "Sunny, 21 °C", "oslo": "Snow, -3 °C"}


# ---- the scripted model ----------------------------------------------------------------------------


def last_user_text(messages: list[ModelMessage]) -> str:
    """The text of the last user prompt in the history."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart):
                    return part.content if isinstance(part.content, str) else " ".join(map(str, part.content))
    return ""


def count_user_messages(messages: list[ModelMessage]) -> int:
    requests = [m for m in messages if isinstance(m, ModelRequest)]
    return sum(isinstance(part, UserPromptPart) for request in requests for part in request.parts)


def tool_results(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    """The tool results in the latest request: non-empty when the model is called after its tools ran."""
    last = messages[-1]
    if not isinstance(last, ModelRequest):
        return []
    return [part for part in last.parts if isinstance(part, ToolReturnPart)]


async def think(text: str) -> AsyncIterator[dict[int, DeltaThinkingPart]]:
    """Streams `text` as a thinking part, a few words per delta."""
    for piece in pieces(text):
        await asyncio.sleep(DELTA_PAUSE_SECS)
        yield {THINKING: DeltaThinkingPart(content=piece)}


async def say(text: str) -> AsyncIterator[str]:
    """Streams `text` as the answer, a few words per delta."""
    for piece in pieces(text):
        await asyncio.sleep(DELTA_PAUSE_SECS)
        yield piece


async def call(index: int, tool: str, json_args: str) -> AsyncIterator[dict[int, DeltaToolCall]]:
    """Streams one tool call: the name first, then the JSON arguments in two halves (at least 2 deltas)."""
    yield {index: DeltaToolCall(name=tool)}
    half = len(json_args) // 2
    for chunk in (json_args[:half], json_args[half:]):
        await asyncio.sleep(DELTA_PAUSE_SECS)
        yield {index: DeltaToolCall(json_args=chunk)}


def pieces(text: str, words: int = 2) -> list[str]:
    """Splits text into chunks of a couple of words, keeping the spaces, so the chunks join back to it."""
    tokens = text.split(" ")
    chunks = [" ".join(tokens[i : i + words]) for i in range(0, len(tokens), words)]
    return [chunk + " " for chunk in chunks[:-1]] + chunks[-1:]


async def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator:
    """The streaming "model": one call per model turn, with the whole history so far."""
    prompt = last_user_text(messages)
    lowered = prompt.lower()
    results = tool_results(messages)

    if "fail" in lowered:
        async for delta in think("This is going to fail."):
            yield delta
        raise RuntimeError("scripted failure: the model was asked to fail")

    if "parallel" in lowered:
        if not results:
            async for delta in call(FIRST_TOOL, "get_weather", '{"city": "Paris"}'):
                yield delta
            async for delta in call(FIRST_TOOL + 1, "get_weather", '{"city": "Oslo"}'):
                yield delta
        else:
            async for delta in say("Paris: sunny, 21 °C. Oslo: snow, -3 °C."):
                yield delta
        return

    if "weather" in lowered:
        if not results:
            async for delta in think("I should look up the weather in Paris."):
                yield delta
            async for delta in call(FIRST_TOOL, "get_weather", '{"city": "Paris"}'):
                yield delta
        else:
            async for delta in think("The tool answered."):
                yield delta
            async for delta in say("It is sunny in Paris, 21 °C."):
                yield delta
        return

    if "delete" in lowered:
        if not results:
            async for delta in call(FIRST_TOOL, "delete_file", '{"path": "notes.txt"}'):
                yield delta
        elif results[0].content == "deleted notes.txt":
            async for delta in say("Deleted notes.txt."):
                yield delta
        else:  # denied: pydantic-ai hands the model a tool result carrying the denial message
            async for delta in say("I did not delete notes.txt."):
                yield delta
        return

    if "sleep" in lowered:
        if not results:
            async for delta in call(FIRST_TOOL, "slow_task", "{}"):
                yield delta
        else:
            async for delta in say("The slow task finished."):
                yield delta
        return

    async for delta in think("The user said something; I will repeat it."):
        yield delta
    async for delta in say(f"You said: {prompt}. (user messages seen: {count_user_messages(messages)})"):
        yield delta


# ---- the agent and its tools -----------------------------------------------------------------------

# DeferredToolRequests in the output type lets a run end waiting for approval (AG-UI: an interrupt).
agent = Agent(
    FunctionModel(stream_function=scripted_model, model_name="glassbox-scripted"),
    output_type=[str, DeferredToolRequests],
    name="glassbox-pydantic-example",
)


@agent.tool_plain
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return WEATHER.get(city.lower(), "Unknown")


@agent.tool_plain(requires_approval=True)
def delete_file(path: str) -> str:
    """Deletes a file (pretend: nothing is deleted). Needs the user's approval."""
    return f"deleted {path}"


def log_line(line: str) -> None:
    """Writes a line to stderr and appends it to $GLASSBOX_AGENT_LOG, if set (tests read that file)."""
    print(line, file=sys.stderr, flush=True)
    if log_path := os.environ.get("GLASSBOX_AGENT_LOG"):
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(line + "\n")


@agent.tool
async def slow_task(ctx: RunContext) -> str:
    """A task that takes a minute, to try Stop with."""
    log_line(f"started slow_task {ctx.tool_call_id}")
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        log_line(f"cancelled slow_task {ctx.tool_call_id}")
        raise
    return "slow_task finished"


# ---- the AG-UI endpoint ----------------------------------------------------------------------------


async def run_agent(request: Request) -> Response:
    # Parses the RunAgentInput (messages, resume, tools, state), runs the agent and streams AG-UI events
    # as text/event-stream. The client sends the whole history on each request: the server keeps none.
    # include_usage: RUN_FINISHED carries token usage (estimated by FunctionModel).
    # Stop: when the client closes the connection, Starlette's StreamingResponse (uvicorn reports ASGI
    # spec 2.3, so Starlette listens for http.disconnect) cancels the run, and with it a running tool.
    return await AGUIAdapter.dispatch_request(request, agent=agent, include_usage=True)


app = Starlette(routes=[Route("/", run_agent, methods=["POST"])])

if __name__ == "__main__":
    serve(app, port_from_args(__doc__.splitlines()[0]))
