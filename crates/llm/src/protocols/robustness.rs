//! Property tests over every vendor decoder: arbitrary bytes and shuffled,
//! truncated, re-split sequences of realistic frames never panic, and no
//! decoder emits anything after its first terminal event.

use proptest::prelude::*;

use super::anthropic::decoder::AnthropicDecoder;
use super::chat::decoder::ChatDecoder;
use super::gemini::decode::GeminiDecoder;
use super::responses::decoder::ResponsesDecoder;
use crate::event::LlmStreamEvent;
use crate::http::WireDecoder;
use crate::sse::SseDecoder;

fn decode<D: WireDecoder>(mut decoder: D, chunks: &[Vec<u8>]) -> Vec<LlmStreamEvent> {
    let mut sse = SseDecoder::new();
    let mut items = Vec::new();
    let mut events = Vec::new();
    for chunk in chunks {
        sse.push(chunk, &mut items);
        for item in items.drain(..) {
            decoder.item(item, &mut events);
        }
    }
    sse.finish(&mut items);
    for item in items.drain(..) {
        decoder.item(item, &mut events);
    }
    decoder.finish(&mut events);
    events
}

fn check(events: &[LlmStreamEvent]) -> Result<(), TestCaseError> {
    if let Some(terminal) = events.iter().position(LlmStreamEvent::is_terminal) {
        prop_assert_eq!(
            terminal,
            events.len() - 1,
            "events after the terminal: {:?}",
            events
        );
    }
    for event in events {
        if let LlmStreamEvent::TextDelta(text) = event {
            prop_assert!(!text.is_empty(), "empty TextDelta");
        }
    }
    Ok(())
}

fn all(chunks: &[Vec<u8>]) -> Result<(), TestCaseError> {
    check(&decode(ChatDecoder::new("m"), chunks))?;
    check(&decode(ResponsesDecoder::new("m".into()), chunks))?;
    check(&decode(AnthropicDecoder::new("m".into()), chunks))?;
    check(&decode(GeminiDecoder::new("m".into()), chunks))?;
    Ok(())
}

/// Realistic frames of all four protocols (each decoder sees the others'
/// frames too: foreign input must not break it either).
const FRAMES: &[&str] = &[
    "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"t\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"1}\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n",
    "data: {\"error\":{\"message\":\"boom\",\"code\":502}}\n\n",
    "data: [DONE]\n\n",
    "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n",
    "data: {\"type\":\"response.output_item.added\",\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"t\"}}\n\n",
    "data: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"delta\":\"{\\\"a\"}\n\n",
    "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
    "data: {\"type\":\"error\",\"code\":\"x\",\"message\":\"y\"}\n\n",
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg\",\"model\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"tu\",\"name\":\"t\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":2}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"},{\"functionCall\":{\"name\":\"t\",\"args\":{}}}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":2}}\n\n",
    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"thought\",\"thought\":true,\"thoughtSignature\":\"s\"}]}}]}\n\n",
    "{\n  \"error\": {\n    \"code\": 500,\n    \"status\": \"INTERNAL\"\n  }\n}\n",
    ": keep-alive\n\n",
    "data: {not json\n\n",
    "data: \n\n",
    "\u{fffd}\r\n\r\n",
];

fn split(bytes: Vec<u8>, cuts: Vec<usize>) -> Vec<Vec<u8>> {
    let mut positions: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
    positions.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for position in positions {
        chunks.push(bytes[start..position].to_vec());
        start = position;
    }
    chunks.push(bytes[start..].to_vec());
    chunks
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048), cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        all(&split(bytes, cuts))?;
    }

    #[test]
    fn shuffled_truncated_realistic_frames_never_panic(
        picks in proptest::collection::vec(0..FRAMES.len(), 0..24),
        truncate in any::<usize>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut bytes: Vec<u8> = picks.iter().flat_map(|i| FRAMES[*i].bytes()).collect();
        let keep = truncate % (bytes.len() + 1);
        bytes.truncate(keep.max(bytes.len() / 2));
        all(&split(bytes, cuts))?;
    }
}
