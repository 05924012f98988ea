"""A deterministic LangGraph agent served over AG-UI, for trying and testing Glassbox's AG-UI client.

No language model, no network, no API key: the graph's chat model is a small scripted `BaseChatModel`
that streams its answer (reasoning, tool-call arguments, text) in pieces, like a real provider would.

The graph:   START -> agent -> (tool calls?) -> tools -> agent -> END
State:       messages, plus `city` (the last city looked up) and `steps` (agent turns taken), so the
             stream carries STATE_SNAPSHOT events; each node run is a STEP_STARTED/STEP_FINISHED pair.

Script, chosen by the last user message (case-insensitive):
  weather    reasons, calls get_weather(city="Paris"), then answers "It is sunny in Paris, 21 °C."
  otherwise  answers "You said: <message>"

Run:  python langgraph_agent.py --port 8002      (POST AG-UI RunAgentInput to http://127.0.0.1:8002/)
"""

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agui_serve import port_from_args, serve

# A short pause between chunks, so a client really receives the answer in pieces.
CHUNK_PAUSE_SECS = 0.02


# ---- the tool ---------------------------------------------------------------------------------------


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return {"paris": "Sunny, 21 °C", "oslo": "Snow, -3 °C"}.get(city.lower(), "Unknown")


# ---- the scripted chat model ------------------------------------------------------------------------


def pieces(text: str, words: int = 2) -> list[str]:
    """Splits text into chunks of a couple of words, keeping the spaces, so the chunks join back to it."""
    tokens = text.split(" ")
    chunks = [" ".join(tokens[i : i + words]) for i in range(0, len(tokens), words)]
    return [chunk + " " for chunk in chunks[:-1]] + chunks[-1:]


def reasoning(text: str) -> Iterator[AIMessageChunk]:
    # A LangChain "reasoning" content block: ag-ui-langgraph turns it into REASONING_* events.
    for piece in pieces(text):
        yield AIMessageChunk(content=[{"type": "reasoning", "reasoning": piece, "index": 0}])


def answer(text: str, index: int = 1) -> Iterator[AIMessageChunk]:
    # Text as "text" content blocks (after a reasoning block, the content is a list of blocks).
    for piece in pieces(text):
        yield AIMessageChunk(content=[{"type": "text", "text": piece, "index": index}])


def tool_call(call_id: str, name: str, json_args: str) -> Iterator[AIMessageChunk]:
    # Chunks with the same `index` are one tool call (LangChain's fake chat models cannot stream tool
    # calls like this). The name and id come alone first: ag-ui-langgraph makes TOOL_CALL_START of that
    # chunk and drops its args. Then the JSON arguments in two halves: two TOOL_CALL_ARGS.
    half = len(json_args) // 2
    steps = [(name, call_id, ""), (None, None, json_args[:half]), (None, None, json_args[half:])]
    for chunk_name, chunk_id, args in steps:
        chunk = {"type": "tool_call_chunk", "index": 0, "name": chunk_name, "id": chunk_id, "args": args}
        yield AIMessageChunk(content=[], tool_call_chunks=[chunk])


class ScriptedChatModel(BaseChatModel):
    """A chat model that plays a fixed script, streaming it chunk by chunk."""

    @property
    def _llm_type(self) -> str:
        return "glassbox-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "ScriptedChatModel":
        # The script knows its tools; binding changes nothing.
        return self

    def script(self, messages: list[BaseMessage]) -> Iterator[AIMessageChunk]:
        prompt = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        after_tool = isinstance(messages[-1], ToolMessage)
        if "weather" in prompt.lower():
            if not after_tool:
                yield from reasoning("I should look up the weather in Paris.")
                # A tool call id unique to this turn: the thread keeps its history in the checkpointer.
                yield from tool_call(f"call_weather_{len(messages)}", "get_weather", '{"city": "Paris"}')
            else:
                yield from reasoning("The tool answered.")
                yield from answer("It is sunny in Paris, 21 °C.")
        else:
            for piece in pieces(f"You said: {prompt}"):
                yield AIMessageChunk(content=piece)

    def _stream(self, messages, stop=None, run_manager=None, **kwargs) -> Iterator[ChatGenerationChunk]:
        for chunk in self.script(messages):
            generation = ChatGenerationChunk(message=chunk)
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=generation)
            yield generation

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        for chunk in self.script(messages):
            await asyncio.sleep(CHUNK_PAUSE_SECS)
            generation = ChatGenerationChunk(message=chunk)
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=generation)
            yield generation

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        # Not streaming: the same script, its chunks added up into one message.
        chunks = list(self.script(messages))
        message = chunks[0]
        for chunk in chunks[1:]:
            message = message + chunk
        return ChatResult(generations=[ChatGeneration(message=message)])


# ---- the graph ---------------------------------------------------------------------------------------


class AgentState(MessagesState):
    city: str  # the last city looked up
    steps: int  # agent turns taken in this thread


model = ScriptedChatModel().bind_tools([get_weather])


async def agent_node(state: AgentState) -> dict:
    # With AG-UI streaming the graph, ainvoke streams through _astream: each chunk becomes an event.
    reply = await model.ainvoke(state["messages"])
    update: dict = {"messages": [reply], "steps": state.get("steps", 0) + 1}
    for call in reply.tool_calls:
        if call["name"] == "get_weather":
            update["city"] = call["args"].get("city", "")
    return update


builder = StateGraph(AgentState)
builder.add_node("agent", agent_node)
builder.add_node("tools", ToolNode([get_weather]))
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", tools_condition)  # to "tools" when the reply calls tools, else END
builder.add_edge("tools", "agent")
graph = builder.compile(checkpointer=MemorySaver())  # threads live in memory, keyed by AG-UI threadId

# ---- the AG-UI endpoint -------------------------------------------------------------------------------

app = FastAPI(title="Glassbox example LangGraph agent")
add_langgraph_fastapi_endpoint(
    app,
    LangGraphAgent(
        name="glassbox-langgraph-example",
        description="Scripted weather agent",
        graph=graph,
        # No RAW events (a copy of every LangGraph event) and no `rawEvent` field on the others: they
        # would make the stream about ten times larger. A client must still accept them: True is the default.
        emit_raw_events=False,
    ),
    path="/",
)

if __name__ == "__main__":
    serve(app, port_from_args(__doc__.splitlines()[0]))
