//! `wick chat`: turns in the model's chat template; the cache keeps the turns already processed.

use crate::{load, ModelArgs, SamplingArgs};
use anyhow::Result;
use clap::Args;
use pollster::FutureExt as _;
use std::io::{BufRead, Write};
use wick::chat_template::ChatMessage;
use wick::session::{FinishReason, Overflow};

#[derive(Args)]
pub struct ChatArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// A system prompt
    #[arg(long = "system")]
    system: Option<String>,
    /// Tokens per reply at most
    #[arg(short = 'n', long = "n-predict", default_value_t = 1024)]
    n_predict: usize,
    /// When the conversation fills the context, drop the oldest turns (the system prompt stays) and go
    /// on, instead of ending the reply there
    #[arg(long = "drop-old-turns")]
    drop_old_turns: bool,
    #[command(flatten)]
    sampling: SamplingArgs,
}

pub fn main(args: ChatArgs) -> Result<()> {
    let mut session = load::session(&args.model)?;
    let mut sampler = args.sampling.sampler();
    let overflow = if args.drop_old_turns {
        Overflow::DropOldestTurns
    } else {
        Overflow::Stop
    };
    let mut messages: Vec<ChatMessage> = Vec::new();
    if let Some(system) = args.system {
        messages.push(ChatMessage {
            role: "system".into(),
            content: system,
        });
    }
    eprintln!("wick: chat ready; an empty line or end of input quits");
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    loop {
        eprint!("> ");
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        messages.push(ChatMessage {
            role: "user".into(),
            content: line.trim_end().to_string(),
        });
        let turns = messages.len();
        let c = session
            .chat(
                &mut messages,
                args.n_predict,
                &[],
                &mut sampler,
                overflow,
                &mut |text| {
                    let _ = out.write_all(text.as_bytes());
                    let _ = out.flush();
                    true
                },
            )
            .block_on();
        let c = match c {
            Err(wick::Error::ContextFull(n)) => {
                messages.pop();
                eprintln!("wick: that message does not fit the context of {n} tokens (-c sets it)");
                continue;
            }
            c => c?,
        };
        println!();
        if messages.len() < turns {
            eprintln!("wick: the oldest turns were dropped to make room");
        }
        if c.finish == FinishReason::ContextFull {
            let hint = if args.drop_old_turns {
                "the last turn alone fills it"
            } else {
                "--drop-old-turns drops the oldest turns and goes on"
            };
            eprintln!(
                "wick: the context is full ({} tokens): {hint}",
                session.engine.n_ctx()
            );
        }
        eprintln!(
            "wick: {} new prompt tokens, {} generated at {:.1} tok/s",
            c.prompt_processed,
            c.tokens.len(),
            c.tokens.len() as f64 / c.gen_time.as_secs_f64()
        );
        messages.push(ChatMessage {
            role: "assistant".into(),
            content: c.text,
        });
    }
    Ok(())
}
