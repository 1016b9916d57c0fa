//! `wick serve`: an OpenAI-compatible HTTP server on one engine (axum on tokio).
//!
//! Routes: POST /v1/chat/completions, POST /v1/completions, POST /v1/embeddings, GET /v1/models,
//! GET /health, GET /metrics (Prometheus). It binds to loopback unless told otherwise; with --api-key every route but /health
//! wants `Authorization: Bearer KEY`; bodies are size-limited; errors come in OpenAI's shape. An
//! embedding model (one whose file names a pooling) answers embeddings only; a chat model answers
//! embeddings too where --pooling names one.

mod metrics;
mod openai;
mod parallel;
mod routes;
mod worker;

use crate::load::{self, ModelArgs};
use crate::speculate::SpeculationArgs;
use crate::vision::ProjectorArgs;
use anyhow::{Context, Result};
use clap::Args;

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Address to listen on (loopback by default; 0.0.0.0 serves the network)
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Require `Authorization: Bearer KEY` on every request
    #[arg(long = "api-key")]
    api_key: Option<String>,
    /// Send CORS headers so browser pages on other origins can call the server
    #[arg(long)]
    cors: bool,
    /// Largest request body in bytes [default: 1 MiB; 32 MiB with --mmproj, for images]
    #[arg(long = "max-body")]
    max_body: Option<usize>,
    /// Requests answered at once, each in its own slot with an equal share of the context: their
    /// decode steps run together, one pass a token for all (`-np` as llama-server spells it)
    #[arg(long = "parallel", default_value_t = 1)]
    parallel: u32,
    #[command(flatten)]
    speculation: SpeculationArgs,
    /// Chat requests may carry images (OpenAI's image_url content parts, as data: URLs)
    #[command(flatten)]
    projector: ProjectorArgs,
}

pub fn main(args: ServeArgs) -> Result<()> {
    if args.parallel > 1 && args.model.pooling.is_some() {
        anyhow::bail!(
            "--parallel serves completions; a model loaded with --pooling answers embeddings one request \
             at a time: leave out one or the other"
        );
    }
    let images = args.projector.mmproj.is_some();
    let options = wick::engine::LoadOptions {
        sequences: args.parallel,
        ..Default::default()
    };
    let source = load::open_source(&args.model.model)?;
    let draft = args.speculation.open()?;
    let gpu = load::gpu()?;
    let options = args.speculation.options(options);
    let options = args.projector.options(options, args.model.batch_size)?;
    let mut session = load::session_on(gpu, source, &args.model, options)?;
    args.projector.attach(&mut session)?;
    draft.start(&mut session)?;
    let max_body = args
        .max_body
        .unwrap_or(if images { 32 << 20 } else { 1 << 20 });
    let model_id = model_id(&args.model);
    let has_key = args.api_key.is_some();
    let metrics = std::sync::Arc::new(metrics::Metrics::default());
    let tasks = start_engine(session, metrics.clone());
    let state = routes::State::new(tasks, metrics, model_id.clone(), args.api_key);
    let app = routes::router(state, args.cors, max_body);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let addr = format!("{}:{}", args.host, args.port);
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let local = listener.local_addr()?;
        eprintln!("wick: serving {model_id} at http://{local}/v1 (Ctrl-C stops)");
        if !local.ip().is_loopback() && !has_key {
            eprintln!("wick: warning: listening beyond this machine with no --api-key");
        }
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    })
}

/// The model's name in the API: its file name without .gguf.
pub fn model_id(args: &ModelArgs) -> String {
    let path = args.model.as_deref().unwrap_or(load::DEFAULT_MODEL);
    let name = std::path::Path::new(path)
        .file_name()
        .map_or(path.into(), |n| n.to_string_lossy());
    name.strip_suffix(".gguf").unwrap_or(&name).to_string()
}

/// Starts the engine thread and returns the queue that feeds it; the thread counts what it does
/// in `metrics`. An engine loaded for several sequences serves that many requests at once
/// (parallel.rs); otherwise one at a time, in arrival order (worker.rs).
fn start_engine(
    session: wick::session::Session,
    metrics: std::sync::Arc<metrics::Metrics>,
) -> tokio::sync::mpsc::Sender<worker::Task> {
    let (tasks, queue) = tokio::sync::mpsc::channel(worker::QUEUE_DEPTH);
    std::thread::Builder::new()
        .name("wick-engine".into())
        .spawn(move || match session.engine.sequences() {
            1 => worker::serve_in_turn(session, queue, &metrics),
            _ => parallel::serve(session, queue, &metrics),
        })
        .expect("the engine thread starts");
    tasks
}
