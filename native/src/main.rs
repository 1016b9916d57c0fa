//! `wick`: run GGUF language models on the GPU. Flags follow llama.cpp's spelling where one exists.

mod bench;
mod chat;
mod embed;
mod http_source;
mod info;
mod load;
mod peak;
mod perplexity;
mod quantize;
mod run;
mod serve;
mod speculate;
mod tune;
mod tuning_file;
mod vision;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "wick",
    version,
    about = "Run GGUF language models on the GPU (Metal, Vulkan, DX12) through wgpu"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate text after a prompt (special tokens in the prompt are parsed).
    Run(run::RunArgs),
    /// Chat with the model's chat template; the cache is kept across turns.
    Chat(chat::ChatArgs),
    /// Show a model's architecture, metadata and tensors.
    Info(info::InfoArgs),
    /// Quantize a model to another type.
    Quantize(quantize::QuantizeArgs),
    /// Perplexity over a text file, by llama-perplexity's method.
    Perplexity(perplexity::PerplexityArgs),
    /// Prompt and generation speed, like llama-bench.
    Bench(bench::BenchArgs),
    /// Time kernel shapes on this adapter for a model's products (and a prompt's recurrence and
    /// attention) and keep the fastest.
    Tune(tune::TuneArgs),
    /// An OpenAI-compatible HTTP server (chat and text completions, streamed or whole; embeddings).
    Serve(serve::ServeArgs),
    /// Embeddings of texts, printed as OpenAI's embeddings answer (JSON).
    Embed(embed::EmbedArgs),
}

/// `--logit-bias`: ID+BIAS or ID-BIAS.
fn parse_logit_bias(text: &str) -> Result<(u32, f32), String> {
    let split = text.find(['+', '-']).filter(|&at| at > 0);
    let parsed = split.and_then(|at| {
        let bias: f32 = text[at..].trim_start_matches('+').parse().ok()?;
        Some((text[..at].parse::<u32>().ok()?, bias))
    });
    match parsed {
        // -inf bans the token, as in llama.cpp; +inf would take it out of the ranking instead.
        Some((token, bias)) if bias.is_finite() || bias == f32::NEG_INFINITY => Ok((token, bias)),
        _ => Err(format!(
            "{text:?} is not ID+BIAS or ID-BIAS (as 15043+1, 29871-100 or 2-inf)"
        )),
    }
}

/// Sampling, as llama.cpp's flags.
#[derive(Args, Clone)]
pub struct SamplingArgs {
    /// Temperature; 0 is greedy
    #[arg(long = "temp", default_value_t = 0.8)]
    pub temp: f32,
    #[arg(long = "top-k", default_value_t = 40)]
    pub top_k: usize,
    #[arg(long = "top-p", default_value_t = 0.95)]
    pub top_p: f32,
    #[arg(long = "min-p", default_value_t = 0.05)]
    pub min_p: f32,
    #[arg(long = "repeat-penalty", default_value_t = 1.0)]
    pub repeat_penalty: f32,
    /// Subtracted from the logit of each of the last repeat-last-n tokens
    #[arg(
        long = "presence-penalty",
        default_value_t = 0.0,
        allow_negative_numbers = true
    )]
    pub presence_penalty: f32,
    /// Subtracted from the logit of each of the last repeat-last-n tokens once a time it is there
    #[arg(
        long = "frequency-penalty",
        default_value_t = 0.0,
        allow_negative_numbers = true
    )]
    pub frequency_penalty: f32,
    #[arg(long = "repeat-last-n", default_value_t = 64)]
    pub repeat_last_n: usize,
    /// Add BIAS to a token's logit before the penalties, as ID+BIAS or ID-BIAS (llama.cpp's form);
    /// repeat for several tokens. -100 all but bans the token (-inf bans it), 100 all but forces it
    #[arg(long = "logit-bias", value_parser = parse_logit_bias, allow_hyphen_values = true)]
    pub logit_bias: Vec<(u32, f32)>,
    /// Random seed [default: from the clock]
    #[arg(short = 's', long = "seed")]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub grammar: GrammarArgs,
}

/// What a reply must match, as llama.cpp's flags; one of them at most.
#[derive(Args, Clone)]
#[group(multiple = false)]
pub struct GrammarArgs {
    /// The reply is JSON matching this JSON schema
    #[arg(short = 'j', long = "json-schema")]
    pub json_schema: Option<String>,
    /// The reply is JSON matching the JSON schema in this file
    #[arg(long = "json-schema-file")]
    pub json_schema_file: Option<std::path::PathBuf>,
    /// The reply matches this grammar (llguidance's Lark syntax)
    #[arg(long = "grammar")]
    pub grammar: Option<String>,
    /// The reply matches the grammar in this file (llguidance's Lark syntax)
    #[arg(long = "grammar-file")]
    pub grammar_file: Option<std::path::PathBuf>,
}

impl GrammarArgs {
    /// The grammar the flags name, read and parsed; None where none is given.
    pub fn grammar(&self) -> anyhow::Result<Option<wick::grammar::Grammar>> {
        use anyhow::Context as _;
        use wick::grammar::Grammar;
        let read = |path: &std::path::Path| {
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
        };
        let schema = |text: &str, from: &str| {
            serde_json::from_str(text)
                .map(Grammar::JsonSchema)
                .with_context(|| format!("{from} is not valid JSON"))
        };
        Ok(match self {
            GrammarArgs {
                json_schema: Some(text),
                ..
            } => Some(schema(text, "--json-schema")?),
            GrammarArgs {
                json_schema_file: Some(path),
                ..
            } => Some(schema(&read(path)?, &path.display().to_string())?),
            GrammarArgs {
                grammar: Some(text),
                ..
            } => Some(Grammar::Lark(text.clone())),
            GrammarArgs {
                grammar_file: Some(path),
                ..
            } => Some(Grammar::Lark(read(path)?)),
            _ => None,
        })
    }
}

impl SamplingArgs {
    /// A sampler for one reply of `session`'s, held to the grammar the flags name.
    pub fn sampler_for(
        &self,
        session: &mut wick::session::Session,
    ) -> anyhow::Result<wick::sampler::Sampler> {
        let mut sampler = self.sampler(session)?;
        if let Some(grammar) = self.grammar.grammar()? {
            sampler.constraint = Some(session.constraint(&grammar)?);
        }
        Ok(sampler)
    }

    /// A sampler for `session`'s replies, with no grammar.
    pub fn sampler(
        &self,
        session: &wick::session::Session,
    ) -> anyhow::Result<wick::sampler::Sampler> {
        // The last bias given for a token stands.
        let logit_bias: std::collections::BTreeMap<u32, f32> =
            self.logit_bias.iter().copied().collect();
        let seed = self.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        let config = wick::sampler::SamplerConfig {
            temperature: self.temp,
            top_k: self.top_k,
            top_p: self.top_p,
            min_p: self.min_p,
            repeat_penalty: self.repeat_penalty,
            presence_penalty: self.presence_penalty,
            frequency_penalty: self.frequency_penalty,
            repeat_last_n: self.repeat_last_n,
            seed,
            logit_bias: logit_bias.into_iter().collect(),
        };
        (config.check_logit_bias(session.n_vocab()))
            .map_err(|e| anyhow::anyhow!("--logit-bias: {e}"))?;
        Ok(wick::sampler::Sampler::new(config))
    }
}

fn main() {
    // llama-server's two-letter `-np` (a short flag in clap is one letter) means --parallel.
    let args = std::env::args().map(|a| match a.as_str() {
        "-np" => "--parallel".to_string(),
        _ => a,
    });
    let cli = Cli::parse_from(args);
    if !matches!(cli.command, Command::Serve(_)) {
        exit_quietly_on_closed_stdout();
    }
    give_display_clients_a_runtime_dir();
    let result = match cli.command {
        Command::Run(a) => run::main(a),
        Command::Chat(a) => chat::main(a),
        Command::Info(a) => info::main(a),
        Command::Quantize(a) => quantize::main(a),
        Command::Perplexity(a) => perplexity::main(a),
        Command::Bench(a) => bench::main(a),
        Command::Tune(a) => tune::main(a),
        Command::Serve(a) => serve::main(a),
        Command::Embed(a) => embed::main(a),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

/// On a Linux machine without a session (a server, a container, CI), XDG_RUNTIME_DIR is unset and the
/// Vulkan stack's display clients, which Wick never uses, print "error: XDG_RUNTIME_DIR is invalid or
/// not set" when the GPU is opened: an error that is none. Point it at a private folder of this user's
/// (as a login session would) where it is unset or unusable; a valid one is left alone.
fn give_display_clients_a_runtime_dir() {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
        let usable = |dir: &std::path::Path| {
            std::fs::metadata(dir).is_ok_and(|m| {
                // SAFETY: getuid has no preconditions.
                m.is_dir()
                    && m.uid() == unsafe { libc::getuid() }
                    && m.permissions().mode() & 0o077 == 0
            })
        };
        if std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| usable(d.as_ref())) {
            return;
        }
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let dir = std::env::temp_dir().join(format!("wick-runtime-{uid}"));
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        if usable(&dir) {
            // SAFETY: set at startup, before any other thread exists.
            unsafe { std::env::set_var("XDG_RUNTIME_DIR", &dir) };
        }
    }
}

/// `wick info | head` closes stdout early; like other Unix tools, end there instead of panicking in
/// println!. (Rust ignores SIGPIPE; the server keeps that, its sockets report EPIPE as errors.)
fn exit_quietly_on_closed_stdout() {
    #[cfg(unix)]
    // SAFETY: restoring a signal's default action at startup, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
