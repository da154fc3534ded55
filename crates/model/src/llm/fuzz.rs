//! Fuzzing the model stream: the SSE parser and both providers' decoders
//! above it, fed the recorded streams (`tests/fixtures/llm`) and the
//! corpus mutated. Properties: no panic, and the same stream cut into
//! random chunks yields the same events and decodes to the same response
//! or error as the stream in one piece.

use hearth_fuzz::{Rng, Target, chunks};

use super::sse::{Event, Parser};
use super::{anthropic, openai};

#[test]
fn any_chunking_gives_the_same_events_and_response() {
    Target::new("sse")
        .seeds_of("../llm")
        .tokens(&[
            "event: ",
            "data: ",
            "data:",
            "\n\n",
            "\r\n",
            "\r",
            ": keep-alive\n",
            "data: [DONE]\n\n",
            "\"index\": 4294967295",
            "\"index\": 9223372036854775807",
            "content_block_start",
            "content_block_delta",
            "message_stop",
            "input_json_delta",
            "\"tool_calls\":[{\"index\":",
            "\"finish_reason\":\"stop\"",
            "{\"type\":\"error\",\"error\":{}}",
        ])
        .run(check);
}

fn check(stream: &[u8], rng: &mut Rng) {
    let whole = Parser::default().feed(stream);
    let mut parser = Parser::default();
    let mut pieces = Vec::new();
    for chunk in chunks(stream, &rng.cuts(stream.len())) {
        pieces.extend(parser.feed(chunk));
    }
    assert_eq!(pieces, whole, "a chunking changed the events");
    // No event carries a line break the stream did not put in its data.
    for event in &whole {
        assert!(!event.event.contains(['\n', '\r']), "{event:?}");
    }
    assert_eq!(decode(&whole), decode(&pieces));
}

/// Both decoders' outcomes, as text, with the text they streamed.
fn decode(events: &[Event]) -> (String, String) {
    let mut a = anthropic::Decoder::default();
    let mut streamed_a = String::new();
    let mut failed_a = None;
    let mut o = openai::Decoder::default();
    let mut streamed_o = String::new();
    let mut failed_o = None;
    for event in events {
        if failed_a.is_none() {
            failed_a = a.event(event).err();
            streamed_a.push_str(&a.take_fresh_text());
        }
        if failed_o.is_none() {
            failed_o = o.event(event).err();
            streamed_o.push_str(&o.take_fresh_text());
        }
    }
    let a = match failed_a {
        Some(e) => format!("{e:?}"),
        None => format!("{:?}", a.finish()),
    };
    let o = match failed_o {
        Some(e) => format!("{e:?}"),
        None => format!("{:?}", o.finish()),
    };
    (format!("{a} {streamed_a}"), format!("{o} {streamed_o}"))
}

#[test]
fn a_block_index_far_ahead_is_malformed_not_allocated() {
    let stream = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/fuzz/regressions/sse/anthropic_block_index_huge.sse"
    ))
    .expect("the regression file is in the repository");
    let events = Parser::default().feed(&stream);
    let mut decoder = anthropic::Decoder::default();
    let outcome = decoder.event(&events[0]);
    assert!(
        matches!(&outcome, Err(super::LlmError::Malformed(m)) if m.contains("index")),
        "{outcome:?}"
    );
}
