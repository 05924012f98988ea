//! The crash window: SIGKILL the server while a run streams, start it again, and compare what the
//! client had read with what the store kept.

use std::{collections::HashMap, time::Duration};

use glassbox_bench::{summary, Jitter};
use serde_json::json;

use crate::{
    client::{clock_stamp, event_type, seq, string_field, unix_micros, RunStream},
    server::ServerProcess,
    streams, Env,
};

const SCENARIO: &str = "crash";

pub async fn run(env: &Env, trials: usize) -> Result<(), String> {
    let scenario = json!({"delta_interval_ms": 20, "steps": [{"clock_text": 100000}]});
    let mut server = ServerProcess::start(env, &[(SCENARIO, scenario)])?;
    let client = streams::client()?;
    let mut lost_events = Vec::new();
    let mut lost_ms = Vec::new();
    let mut jitter = Jitter::new(0x2545_f491);
    for _ in 0..trials {
        let mut stream =
            RunStream::start(&client, &server.base, &format!("scenario:{SCENARIO}")).await?;
        let kill_at = unix_micros() + 300_000 + jitter.below(1_200_000);
        let mut run_id = String::new();
        let mut stamps: HashMap<u64, u64> = HashMap::new();
        let mut last_read = 0;
        while unix_micros() < kill_at {
            let Ok(Some(event)) =
                tokio::time::timeout(Duration::from_millis(100), stream.next_event()).await
            else {
                continue;
            };
            if run_id.is_empty() {
                run_id = string_field(&event, "run_id")
                    .unwrap_or_default()
                    .to_owned();
            }
            if event_type(&event) == Some("text_delta") {
                if let (Some(seq), Some(stamp)) = (seq(&event), clock_stamp(&event)) {
                    stamps.insert(seq, stamp);
                    last_read = seq;
                }
            }
        }
        server.kill();
        drop(stream);
        server.restart()?;

        let mut stored = RunStream::attach(&client, &server.base, &run_id, 0).await?;
        let mut last_stored = 0;
        while let Some(event) = stored.next_event().await {
            if event_type(&event) == Some("text_delta") {
                last_stored = seq(&event).unwrap_or(last_stored);
            }
        }
        let lost = last_read.saturating_sub(last_stored);
        let window = match (stamps.get(&last_read), stamps.get(&last_stored)) {
            (Some(read), Some(kept)) => read.saturating_sub(*kept),
            // Nothing of this run was stored: everything since its first delta was lost.
            (Some(read), None) => stamps
                .values()
                .min()
                .map_or(0, |first| read.saturating_sub(*first)),
            _ => 0,
        };
        lost_events.push(lost);
        lost_ms.push(window / 1000);
    }
    let (events_p50, _, events_max) = summary(&mut lost_events);
    let (ms_p50, _, ms_max) = summary(&mut lost_ms);
    println!(
        "{trials} SIGKILLs of a run streaming a delta every 20 ms: events the client had read but the store lost: p50 {events_p50}, max {events_max}; their span: p50 {ms_p50} ms, max {ms_max} ms"
    );
    Ok(())
}
