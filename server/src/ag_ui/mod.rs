//! AG-UI 1.0, the streaming protocol agent frameworks share (pydantic-ai, LangGraph, CrewAI, ADK…):
//! its wire types ([`wire`]), typed serde structs both ways, so that an AG-UI agent can run inside
//! Glassbox (`agents::ag_ui`) and Glassbox can answer an AG-UI client ([`outbound`], a Glassbox
//! run's events as AG-UI events). A leaf module: it names no other module of the server.

pub mod outbound;
pub mod wire;
