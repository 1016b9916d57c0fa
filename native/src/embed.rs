//! `wick embed`: each text's embedding, printed as OpenAI's embeddings answer (JSON on stdout), what
//! `wick serve` answers at /v1/embeddings for the same inputs.

use crate::load::{self, ModelArgs};
use anyhow::Result;
use clap::Args;
use pollster::FutureExt as _;
use wick::openai::embeddings::{respond, EmbedError, EmbeddingInput, EmbeddingRequest};

#[derive(Args)]
pub struct EmbedArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The texts to embed, each its own vector
    #[arg(required = true)]
    texts: Vec<String>,
    /// Keep the first N values of each vector, normalized again (Matryoshka-trained models)
    #[arg(long)]
    dimensions: Option<usize>,
    /// Cut a text longer than the context to fit rather than refuse it
    #[arg(long)]
    truncate: bool,
}

pub fn main(args: EmbedArgs) -> Result<()> {
    let mut session = load::session(&args.model, Default::default())?;
    let n = args.texts.len();
    let request = EmbeddingRequest {
        input: EmbeddingInput::Texts(args.texts),
        encoding_format: None,
        dimensions: args.dimensions,
        truncate: args.truncate,
    };
    let model = crate::serve::model_id(&args.model);
    let start = std::time::Instant::now();
    let answer = match respond(&mut session, &request, &model).block_on() {
        Ok(answer) => answer,
        Err(EmbedError::Invalid(e)) => anyhow::bail!("{e}"),
        Err(EmbedError::Engine(e)) => return Err(e.into()),
    };
    let seconds = start.elapsed().as_secs_f64();
    println!("{answer}");
    eprintln!(
        "wick: {n} embeddings ({} tokens, pooling {}) in {seconds:.2} s ({:.1} a second)",
        answer["usage"]["prompt_tokens"],
        session.engine.pooling().map_or("none", |p| p.name()),
        n as f64 / seconds
    );
    Ok(())
}
