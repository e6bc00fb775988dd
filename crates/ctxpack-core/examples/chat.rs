//! A chat in OpenAI's shape — parallel tool calls, an image — packed for
//! gpt-4o, and the request to send printed: the kept messages your own,
//! byte for byte, cache-first, with `prompt_cache_key`; then the chat
//! counted as it is sent, and trimmed as LangChain's `trim_messages` does.
//!   cargo run -p ctxpack-core --example chat
use ctxpack_core::{
    AssembleRequest, Builder, BuilderConfig, Chat, ChatShape, CountRequest, Next, NoHost,
    TrimRequest,
};
use serde_json::json;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    let messages = json!([
        {"role": "system", "content": "You are a travel agent. Answer briefly."},
        {"role": "user", "content": [
            {"type": "text", "text": "Weather in Lyon and Nice? Here is my ticket."},
            {"type": "image_url", "image_url": {"url": "https://example.com/t.png", "detail": "low"}}]},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "w1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Lyon\"}"}},
            {"id": "w2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Nice\"}"}}]},
        {"role": "tool", "tool_call_id": "w1", "content": "Lyon: 21 C, sun"},
        {"role": "tool", "tool_call_id": "w2", "content": "Nice: 24 C, sun"}
    ]);
    let chat = Chat::new(ChatShape::OpenaiChat, &messages);
    let builder = Builder::new(BuilderConfig::default())?;
    let request = AssembleRequest {
        model: Some("gpt-4o".into()),
        budget: Some(2_000),
        chat: Some(chat.clone()),
        ..AssembleRequest::default()
    };
    // The default profile asks no store: the assembly is done at once.
    let pack = match builder.start(&request).next() {
        Next::Done(outcome) => outcome?,
        Next::Calls(_) => return Err("the default profile asked a store".into()),
    };
    let sent = pack.chat.ok_or("a chat's pack has the request to send")?;
    println!("{}", sent.body); // POST it with "model": "gpt-4o"
    println!("sources {:?}", sent.sources); // your message each one is
    let counted = builder.count(&CountRequest {
        model: Some("gpt-4o".into()),
        chat: Some(chat.clone()),
        ..CountRequest::default()
    })?;
    println!("{} tokens as OpenAI counts the request", counted.total);
    let trim: TrimRequest = serde_json::from_value(json!({
        "chat": chat, "max-tokens": 120, "model": "gpt-4o", "strategy": "last"
    }))?;
    let trimmed = builder.trim(&trim, &mut NoHost).map_err(|f| f.error)?;
    println!("kept {:?} within 120 tokens", trimmed.kept);
    Ok(())
}
