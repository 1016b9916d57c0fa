//! `wick chat`: turns in the model's chat template; the cache keeps the turns already processed.

use crate::{load, ModelArgs, SamplingArgs};
use anyhow::Result;
use clap::Args;
use pollster::FutureExt as _;
use std::io::{BufRead, Write};
use wick::chat_template::ChatMessage;

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
    #[command(flatten)]
    sampling: SamplingArgs,
}

pub fn main(args: ChatArgs) -> Result<()> {
    let mut session = load::session(&args.model)?;
    let mut sampler = args.sampling.sampler();
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
        let prompt = session.chat_prompt(&messages)?;
        let tokens = session.tokenize_prompt(&prompt);
        let c = session
            .complete(&tokens, args.n_predict, &[], &mut sampler, &mut |text| {
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
                true
            })
            .block_on()?;
        println!();
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
