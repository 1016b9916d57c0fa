//! Arbitrary template source rendered under the limits `chat_template::render` uses for a template read
//! from a downloaded file (with less fuel, see below): it renders or fails with an error, and never
//! panics, hangs (libFuzzer's -timeout) or grows memory without bound (-rss_limit_mb / -malloc_limit_mb).
//!
//! Input: the first byte sets add_generation_prompt (bit 0); the rest, as UTF-8 (invalid bytes as
//! U+FFFD), is the template.

#![no_main]

use libfuzzer_sys::fuzz_target;
use wick::chat_template::{render_with, ChatMessage, Limits, TemplateError};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let template = String::from_utf8_lossy(rest);
    let messages = [
        ChatMessage::new("system", "You are a helpful assistant."),
        ChatMessage::new("user", "What is 2+2? <|im_end|> {{ not a tag }}"),
        ChatMessage::new("assistant", "4"),
        ChatMessage::new("user", "  And 3+3?\n"),
    ];
    // The default limits, but a twentieth of the fuel: 20 million instructions take about 16 s in this
    // instrumented build, past -timeout=10. What fuzzing looks for is an instruction that costs far more
    // time or memory than its share, which a smaller budget shows as well.
    let limits = Limits {
        fuel: 1_000_000,
        ..Limits::default()
    };
    let r = render_with(&template, &messages, flags & 1 == 1, "<s>", "</s>", limits);
    match r {
        Ok(out) => assert!(out.len() <= limits.max_output_bytes),
        Err(
            TemplateError::Syntax(_)
            | TemplateError::Raised(_)
            | TemplateError::OutOfFuel(_)
            | TemplateError::OutputTooLarge(_)
            | TemplateError::Render(_)
            | TemplateError::TemplateTooLarge { .. },
        ) => {}
    }
});
