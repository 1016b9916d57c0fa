//! `wick chat`: turns in the model's chat template; the cache keeps the turns already processed. With
//! a vision projector (--mmproj), messages show images: --image for the first, `/image PATH` lines
//! for the next.

use crate::load::{self, ModelArgs};
use crate::speculate::SpeculationArgs;
use crate::vision::{read_image, read_images, ProjectorArgs};
use crate::SamplingArgs;
use anyhow::Result;
use clap::Args;
use pollster::FutureExt as _;
use std::io::{BufRead, IsTerminal, Write};
use wick::chat_template::{ChatMessage, Extras, Variables};
use wick::reply::FinishReason;
use wick::session::Overflow;

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
    /// Variables for the chat template, a JSON object: '{"enable_thinking": false}' keeps Qwen 3 from
    /// thinking, '{"reasoning_effort": "low"}' shortens gpt-oss's
    #[arg(long = "chat-template-kwargs", value_name = "JSON", value_parser = template_variables)]
    chat_template_kwargs: Option<Variables>,
    /// When the conversation fills the context, drop the oldest turns (the system prompt stays) and go
    /// on, instead of ending the reply there
    #[arg(long = "drop-old-turns")]
    drop_old_turns: bool,
    #[command(flatten)]
    sampling: SamplingArgs,
    #[command(flatten)]
    speculation: SpeculationArgs,
    #[command(flatten)]
    projector: ProjectorArgs,
    /// An image for the first message (PNG, JPEG, WebP or GIF); repeat for several. In the chat,
    /// a line `/image PATH` shows one with the next message
    #[arg(long = "image")]
    images: Vec<String>,
}

fn template_variables(text: &str) -> Result<Variables, String> {
    let value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    wick::chat_template::variables(&value)
}

pub fn main(args: ChatArgs) -> Result<()> {
    let mut images = read_images(&args.images, &args.projector)?;
    let source = load::open_source(&args.model.model)?;
    let draft = args.speculation.open()?;
    let gpu = load::gpu()?;
    let options = args.speculation.options(Default::default());
    let options = args.projector.options(options, args.model.batch_size)?;
    let mut session = load::session_on(gpu, source, &args.model, options)?;
    args.projector.attach(&mut session)?;
    draft.start(&mut session)?;
    let mut sampler = args.sampling.sampler(&session)?;
    let grammar = args.sampling.grammar.grammar()?;
    let overflow = if args.drop_old_turns {
        Overflow::DropOldestTurns
    } else {
        Overflow::Stop
    };
    let extras = Extras {
        tools: Vec::new(),
        variables: args.chat_template_kwargs.unwrap_or_default(),
    };
    let mut messages: Vec<ChatMessage> = Vec::new();
    if let Some(system) = args.system {
        messages.push(ChatMessage::new("system", system));
    }
    interrupt::install();
    eprintln!(
        "wick: chat ready; Ctrl-C stops a reply; /clear starts over; an empty line, /quit, end of input or Ctrl-C at the prompt quits"
    );
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    loop {
        eprint!("> ");
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            break;
        }
        let text = match Line::read(&line) {
            Line::Quit => break,
            Line::Clear => {
                messages.retain(|m| m.role == "system");
                images.clear();
                eprintln!("wick: a new conversation");
                continue;
            }
            Line::Image(path) => {
                match (session.takes_images(), read_image(path)) {
                    (false, _) => {
                        eprintln!("wick: images need a vision projector for the model (--mmproj)")
                    }
                    (true, Err(e)) => eprintln!("wick: {e:#}"),
                    (true, Ok(image)) => {
                        eprintln!("wick: the image goes with your next message");
                        images.push(image);
                    }
                }
                continue;
            }
            Line::Message(text) => text,
        };
        let shown = std::mem::take(&mut images);
        messages.push(ChatMessage::with_images("user", text, shown));
        let turns = messages.len();
        // Each reply matches the grammar from its start.
        sampler.constraint = grammar
            .as_ref()
            .map(|g| session.constraint(g))
            .transpose()?;
        let reply = interrupt::Reply::start();
        let mut thoughts = Thoughts::default();
        let c = session
            .chat(
                &mut messages,
                &extras,
                (args.n_predict, &[]),
                &mut sampler,
                overflow,
                &mut |piece| {
                    thoughts.say(piece.reasoning);
                    if !piece.text.is_empty() {
                        thoughts.end();
                        let _ = out.write_all(piece.text.as_bytes());
                        let _ = out.flush();
                    }
                    !reply.interrupted()
                },
            )
            .block_on();
        thoughts.end();
        drop(reply);
        let c = match c {
            Err(wick::Error::ContextFull(n)) => {
                messages.pop();
                eprintln!("wick: that message does not fit the context of {n} tokens (-c sets it)");
                continue;
            }
            Err(e @ wick::Error::Model(_)) => {
                // An image the projector cannot take, or markers that do not match: the message goes.
                messages.pop();
                eprintln!("wick: {e}");
                continue;
            }
            c => c?,
        };
        println!();
        if messages.len() < turns {
            eprintln!("wick: the oldest turns were dropped to make room");
        }
        if c.finish == FinishReason::Cancelled {
            eprintln!("wick: stopped");
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
        messages.push(ChatMessage::new("assistant", c.text));
    }
    Ok(())
}

/// What a line typed at the prompt asks for. A command is the whole line; any other line, one
/// that starts with a slash among them ("/etc/hosts: what is it for?"), is said to the model.
#[derive(Debug, PartialEq)]
enum Line<'a> {
    /// An empty line, `/quit` or `/exit`.
    Quit,
    /// `/clear`: a new conversation, the system prompt kept.
    Clear,
    /// `/image PATH`: an image shown with the next message.
    Image(&'a str),
    Message(&'a str),
}

impl Line<'_> {
    fn read(line: &str) -> Line<'_> {
        let command = line.trim();
        match command {
            "" | "/quit" | "/exit" => Line::Quit,
            "/clear" => Line::Clear,
            _ => match command.strip_prefix("/image ") {
                Some(path) => Line::Image(path.trim()),
                None => Line::Message(line.trim_end()),
            },
        }
    }
}

/// A reply's reasoning, shown on standard error (dimmed on a terminal) as it comes, so that standard
/// output carries the answers alone.
#[derive(Default)]
struct Thoughts {
    open: bool,
}

impl Thoughts {
    fn say(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut err = std::io::stderr();
        if !self.open {
            self.open = true;
            let _ = err.write_all(if err.is_terminal() { b"\x1b[2m" } else { b"" });
        }
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    }

    fn end(&mut self) {
        if std::mem::take(&mut self.open) {
            let mut err = std::io::stderr();
            let reset: &[u8] = if err.is_terminal() { b"\x1b[0m" } else { b"" };
            let _ = err.write_all(reset);
            let _ = err.write_all(b"\n");
        }
    }
}

/// Ctrl-C: during a reply it stops the reply (what was said stays in the conversation); at the prompt
/// it ends the program, as it would without a handler.
mod interrupt {
    use std::sync::atomic::{AtomicBool, Ordering};

    static REPLYING: AtomicBool = AtomicBool::new(false);
    static INTERRUPTED: AtomicBool = AtomicBool::new(false);

    #[cfg(unix)]
    extern "C" fn on_sigint(_: libc::c_int) {
        if !REPLYING.load(Ordering::SeqCst) {
            // SAFETY: _exit is async-signal-safe.
            unsafe { libc::_exit(130) };
        }
        INTERRUPTED.store(true, Ordering::SeqCst);
    }

    pub fn install() {
        #[cfg(unix)]
        // SAFETY: the handler only touches atomics and calls _exit.
        unsafe {
            libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
        }
    }

    /// While a reply is being generated; dropping it ends that.
    pub struct Reply;

    impl Reply {
        pub fn start() -> Reply {
            INTERRUPTED.store(false, Ordering::SeqCst);
            REPLYING.store(true, Ordering::SeqCst);
            Reply
        }

        pub fn interrupted(&self) -> bool {
            INTERRUPTED.load(Ordering::SeqCst)
        }
    }

    impl Drop for Reply {
        fn drop(&mut self) {
            REPLYING.store(false, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Line;

    #[test]
    fn lines_read_as_commands_or_messages() {
        for quit in ["\n", "  \n", "/quit\n", "/exit", " /quit \r\n"] {
            assert_eq!(Line::read(quit), Line::Quit, "{quit:?}");
        }
        assert_eq!(Line::read("/clear\n"), Line::Clear);
        assert_eq!(Line::read("/image  a b.png \n"), Line::Image("a b.png"));
        for said in [
            "/etc/hosts: what is it for?\n",
            "/quit now\n",
            "/clearly\n",
            "hi /quit\n",
        ] {
            assert_eq!(Line::read(said), Line::Message(said.trim_end()), "{said:?}");
        }
        assert_eq!(Line::read("  indented\n"), Line::Message("  indented"));
    }
}
