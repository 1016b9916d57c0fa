//! `wick run`: the prompt as given, generated text streamed to stdout, stats to stderr.

use crate::load::{self, ModelArgs};
use crate::speculate::SpeculationArgs;
use crate::vision::{read_images, ProjectorArgs};
use crate::SamplingArgs;
use anyhow::{Context, Result};
use clap::Args;
use pollster::FutureExt as _;
use std::io::Write;
use wick::reply::{FinishReason, Reply};

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The prompt
    #[arg(short = 'p', long = "prompt")]
    prompt: String,
    /// Tokens to generate at most (-1: until the end of generation or a full context)
    #[arg(short = 'n', long = "n-predict", default_value_t = -1, allow_hyphen_values = true)]
    n_predict: i64,
    #[command(flatten)]
    sampling: SamplingArgs,
    #[command(flatten)]
    speculation: SpeculationArgs,
    #[command(flatten)]
    projector: ProjectorArgs,
    /// An image for the prompt (PNG, JPEG, WebP or GIF), placed at each <__media__> in the
    /// prompt, or before it; repeat for several
    #[arg(long = "image")]
    images: Vec<String>,
    /// What the reply is expected to say (a text file: code with a few lines to change), drafted
    /// from first; needs --lookup or --draft
    #[arg(long = "prediction-file", value_name = "FILE")]
    prediction: Option<std::path::PathBuf>,
}

pub fn main(args: RunArgs) -> Result<()> {
    let images = read_images(&args.images, &args.projector)?;
    let prediction = match &args.prediction {
        Some(_) if !args.speculation.speculating() => {
            anyhow::bail!(
                "--prediction-file drafts for a speculating model: add --lookup or --draft"
            )
        }
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading the prediction {}", path.display()))?,
        ),
        None => None,
    };
    let source = load::open_source(&args.model.model)?;
    let draft = args.speculation.open()?;
    let gpu = load::gpu()?;
    let options = args.speculation.options(Default::default());
    let options = args.projector.options(options, args.model.batch_size)?;
    let mut session = load::session_on(gpu, source, &args.model, options)?;
    args.projector.attach(&mut session)?;
    draft.start(&mut session)?;
    let encoding = std::time::Instant::now();
    let prompt = session
        .tokenize_prompt_with_images(&args.prompt, &images)
        .block_on()?;
    if !images.is_empty() {
        let seconds = encoding.elapsed().as_secs_f64();
        eprintln!("wick: {} image(s) encoded in {seconds:.2} s", images.len());
    }
    let max = if args.n_predict < 0 {
        usize::MAX
    } else {
        args.n_predict as usize
    };
    let mut sampler = args.sampling.sampler_for(&mut session)?;
    if let Some(text) = &prediction {
        session.predict(text);
    }
    let mut out = std::io::stdout();
    let c = session
        .complete(&prompt, Reply::new(max, &[]), &mut sampler, &mut |piece| {
            let _ = out.write_all(piece.text.as_bytes());
            let _ = out.flush();
            true
        })
        .block_on();
    let c = match c {
        Err(wick::Error::ContextFull(n)) => anyhow::bail!(
            "the prompt is {} tokens, more than the context of {n} (-c sets it)",
            prompt.len()
        ),
        c => c?,
    };
    println!();
    let n_ctx = session.engine.n_ctx();
    let stop = match c.finish {
        FinishReason::Stop => "end of text".to_string(),
        FinishReason::Length => "-n tokens".to_string(),
        FinishReason::ContextFull => format!("the context is full ({n_ctx} tokens; -c sets it)"),
        FinishReason::Cancelled => "stopped".to_string(),
    };
    eprintln!(
        "wick: prompt {} tokens in {:.2} s ({:.1} tok/s); generated {} tokens in {:.2} s ({:.1} tok/s); stop: {stop}",
        c.prompt_tokens,
        c.prompt_time.as_secs_f64(),
        c.prompt_processed as f64 / c.prompt_time.as_secs_f64(),
        c.tokens.len(),
        c.gen_time.as_secs_f64(),
        c.tokens.len() as f64 / c.gen_time.as_secs_f64(),
    );
    if let Some(p) = &c.prediction {
        eprintln!(
            "wick: the prediction's {} tokens: {} drafted and kept, {} drafted and not",
            p.tokens.len(),
            p.accepted,
            p.rejected
        );
    }
    if let Some(speculation) = &session.speculation {
        let s = speculation.stats;
        eprintln!(
            "wick: {} checks of {} drafted tokens kept {} ({:.0}%): {:.2} tokens a step",
            s.checks,
            s.proposed,
            s.accepted,
            100.0 * s.accepted as f64 / s.proposed.max(1) as f64,
            s.tokens_per_check(),
        );
        let m = speculation.measured();
        let ms = |t: Option<f64>| t.map_or("-".to_string(), |t| format!("{:.1} ms", t * 1e3));
        let checks: Vec<String> = (m.checks.iter())
            .map(|&(rows, t)| format!("{rows} rows {}", ms(Some(t))))
            .collect();
        eprintln!(
            "wick: measured: a step {}, checks of {}, a drafted token {}; a drafted token stands {:.0}% of the time",
            ms(m.step),
            checks.join(", "),
            ms(m.draft),
            100.0 * m.stands,
        );
    }
    if sampler.constraint.is_some() {
        let steps = c.gen_steps.runs.max(1) as f64;
        eprintln!(
            "wick: the grammar took {:.2} ms a step (masks and moves), the steps {:.1} ms, each reading back {:.0} bytes",
            c.gen_steps.mask.as_secs_f64() * 1e3 / steps,
            c.gen_steps.time.as_secs_f64() * 1e3 / steps,
            c.gen_steps.read_bytes as f64 / steps,
        );
    }
    Ok(())
}
