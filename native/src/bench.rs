//! `wick bench`: prompt processing and generation speed, like llama-bench, with what a token costs:
//! dispatches, submits and weight bytes, the bandwidth that makes, and its share of the adapter's peak.

use crate::{load, peak};
use anyhow::Result;
use clap::{Args, ValueEnum};
use pollster::FutureExt as _;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use wick::engine::{Engine, LoadOptions, Profiled, StepTokens, Totals};
use wick::gguf::Header;
use wick::gpu::Rounding;
use wick::sampler::{Pick, Want};

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Md,
    Json,
}

/// What each generated token reads back from the GPU.
#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Read {
    /// The whole row of logits, picked from on the CPU (as llama-bench's decode copies them back)
    Logits,
    /// The largest logit's index, found on the GPU (greedy)
    Choice,
    /// The top 40 logits with their ids, found on the GPU (the default sampler's top-k)
    Candidates,
    /// The largest logit's index, each step submitted before the step before it is read back, its
    /// token copied on the GPU (a reply's steps where the GPU chooses each token)
    Ahead,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Path or URL of a GGUF model [default: models/SmolLM2-135M-Instruct.Q4_1.gguf]
    #[arg(short = 'm', long = "model")]
    model: Option<String>,
    /// Prompt tokens (0: skip the prompt test)
    #[arg(short = 'p', long = "n-prompt", default_value_t = 512)]
    n_prompt: u32,
    /// Generated tokens (0: skip the generation test)
    #[arg(short = 'n', long = "n-gen", default_value_t = 128)]
    n_gen: u32,
    /// Tokens already in the context when each test starts (read once, not timed), as llama-bench's
    /// -d: decode and prompts deep into a long chat
    #[arg(short = 'd', long = "n-depth", default_value_t = 0)]
    depth: u32,
    /// Prompt tokens per GPU run (1: one at a time, as decoding) [default: 512 on GPUs, 64 where the
    /// adapter runs on the CPU]
    #[arg(short = 'b', long = "batch-size")]
    batch: Option<u32>,
    /// Repetitions, after one that warms up and is not counted
    #[arg(short = 'r', long = "repetitions", default_value_t = 5)]
    reps: u32,
    #[arg(short = 'o', long = "output", value_enum, default_value = "md")]
    output: Format,
    /// The adapter's peak memory bandwidth in GB/s [default: known for common adapters]
    #[arg(long = "peak-gbps")]
    peak_gbps: Option<f64>,
    /// Also time each kernel on its own and print where a token's time goes
    #[arg(long)]
    profile: bool,
    /// What each generated token reads back
    #[arg(long, value_enum, default_value = "logits")]
    read: Read,
    /// Put Gemma 4's per-layer embedding table on the GPU rather than reading each token's rows from
    /// the file
    #[arg(long)]
    per_layer_on_gpu: bool,
    /// How the KV cache holds keys and values: f32, or f16 (half the bytes attention reads)
    /// [default: f16 on GPUs, f32 for CPU-backed adapters]
    #[arg(long = "cache-type", value_enum)]
    cache_type: Option<crate::load::CacheType>,
    /// With --profile, also time the plan of a decode step of this many sequences at once (`wick
    /// serve --parallel`'s step, and a speculative check of as many tokens), kernel by kernel, on
    /// consecutive tokens of one sequence, as a check runs it; for more than 4, a step of 4 too,
    /// and for more than 8 one of 8 (each its own plan)
    #[arg(long = "parallel", default_value_t = 1)]
    parallel: u32,
    /// Norm each product's input in the product's own kernel (on: one dispatch less for each norm)
    /// or in a kernel of its own (off) [default: on for GPUs, off for CPU-backed adapters]
    #[arg(long = "fuse-norms", value_enum)]
    fuse_norms: Option<Switch>,
    /// Let prompts' products run on the GPU's matrix cores (f16 inputs, f32 sums), where the tuner
    /// finds them faster [default: on where the adapter has them]
    #[arg(long = "matrix-cores", value_enum)]
    matrix_cores: Option<Switch>,
    /// Let a decode step's products of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, K-quant and MXFP4 weights
    /// round x to 8 bits and multiply by integer dot products, where the tuner finds that faster
    /// [default: on for GPUs, off for CPU-backed adapters]
    #[arg(long = "int8-x", value_enum)]
    int8_x: Option<Switch>,
    /// Let prompts' products hold their tiles in f16 (f16 inputs, f32 sums), where the tuner finds
    /// that faster [default: on for GPUs, off for CPU-backed adapters]
    #[arg(long = "f16-tiles", value_enum)]
    f16_tiles: Option<Switch>,
    /// Split a step of several tokens' attention over the keys as a step of one does (--parallel's step, a speculative check) [default: on for GPUs, off for CPU-backed
    /// adapters]
    #[arg(long = "split-steps", value_enum)]
    split_steps: Option<Switch>,
    /// Split a step's attention over the keys from this position on (where the merge of the
    /// splits starts to pay is a measurement: compare `-d` below and above it) [default: 32 on
    /// GPUs, 1024 where the adapter runs on the CPU]
    #[arg(long = "split-from")]
    split_from: Option<u32>,
    /// On a GPU, split a step's attention into as many splits as make this many workgroups a
    /// layer, 16 to 64 splits (how many fill a GPU is a measurement: compare `-d` deep into a
    /// context) [default: 256]
    #[arg(long = "split-workgroups")]
    split_workgroups: Option<u32>,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Switch {
    On,
    Off,
}

/// One test's measurements: the wall time of each counted repetition and what its runs cost.
struct Measured {
    n_prompt: u32,
    n_gen: u32,
    depth: u32,
    samples_ns: Vec<u64>,
    totals: Totals,
}

impl Measured {
    fn tokens(&self) -> u32 {
        self.n_prompt + self.n_gen
    }

    fn name(&self) -> String {
        let test = match self.n_prompt {
            0 => format!("tg{}", self.n_gen),
            n => format!("pp{n}"),
        };
        match self.depth {
            0 => test,
            d => format!("{test} @ d{d}"),
        }
    }

    fn samples_ts(&self) -> Vec<f64> {
        let n = self.tokens() as f64;
        self.samples_ns
            .iter()
            .map(|&ns| n * 1e9 / ns as f64)
            .collect()
    }

    /// Per token of the test, over every counted repetition.
    fn per_token(&self, count: u64) -> f64 {
        count as f64 / self.totals.tokens.max(1) as f64
    }

    /// Weight bytes read per second of wall time.
    /// Milliseconds per run recording the pass, submitting it, and waiting for its result.
    fn phases_ms(&self) -> [f64; 3] {
        let t = &self.totals;
        [t.record, t.submit, t.wait].map(|d| self.ms_per_run(d))
    }

    /// Recording a step's pass while the GPU ran the one before (`Totals::record_ahead`).
    fn record_ahead_ms(&self) -> f64 {
        self.ms_per_run(self.totals.record_ahead)
    }

    fn ms_per_run(&self, d: std::time::Duration) -> f64 {
        d.as_secs_f64() * 1e3 / self.totals.runs.max(1) as f64
    }

    fn gbps(&self) -> f64 {
        let seconds = self.samples_ns.iter().sum::<u64>() as f64 / 1e9;
        self.totals.weight_bytes as f64 / seconds / 1e9
    }
}

pub fn main(args: BenchArgs) -> Result<()> {
    let source = load::open_source(&args.model)?;
    let gpu = load::gpu_with(|gpu| {
        if let Some(fuse) = args.fuse_norms {
            if !gpu.set_fuses_norms(fuse == Switch::On) {
                anyhow::bail!("this adapter binds too few storage buffers per kernel to norm a product's input in its kernel");
            }
        }
        if let Some(cores) = args.matrix_cores {
            if cores == Switch::On && !gpu.has_matrix_cores() {
                anyhow::bail!("{} has no matrix cores that Wick's kernels can use (cooperative matrices multiplying f16 into f32 sums, 16 x 16 or 8 x 8)", gpu.describe());
            }
            gpu.set_rounds(Rounding::MatrixCores, cores == Switch::On);
        }
        if let Some(int8) = args.int8_x {
            gpu.set_rounds(Rounding::Int8X, int8 == Switch::On);
        }
        if let Some(f16) = args.f16_tiles {
            gpu.set_rounds(Rounding::F16Tiles, f16 == Switch::On);
        }
        if let Some(split) = args.split_steps {
            gpu.set_splits_steps(split == Switch::On);
        }
        if let Some(from) = args.split_from {
            gpu.set_split_attention_from(from);
        }
        if let Some(workgroups) = args.split_workgroups {
            gpu.set_split_workgroups(workgroups);
        }
        Ok(())
    })?;
    let n_ctx = (args.depth + args.n_prompt + args.n_gen).max(args.parallel);
    let options = LoadOptions {
        n_ctx,
        batch: args.batch,
        per_layer_on_gpu: args.per_layer_on_gpu,
        sequences: args.parallel,
        kv_cache: args.cache_type.map(crate::load::CacheType::kv),
        ..Default::default()
    };
    let held_before = gpu.memory().buffer_bytes;
    let mut engine =
        Engine::load(gpu.clone(), source.as_ref(), &options, &mut |_, _| {}).block_on()?;
    // What the upload staged is freed once the queue has run it.
    gpu.queue.submit([]);
    gpu.finished().block_on()?;
    let held = gpu.memory().buffer_bytes - held_before;
    eprintln!(
        "wick: the model holds {:.1} MiB of GPU memory for a {:.1} MiB file{}",
        held as f64 / (1 << 20) as f64,
        source.len() as f64 / (1 << 20) as f64,
        match engine.stats.row_bytes_per_token {
            0 => String::new(),
            b => format!(", and reads {b} bytes of per-layer rows from the file per token"),
        }
    );
    crate::tuning_file::tune_new_shapes(&mut engine)?;
    let batch = engine.stats.chunk_tokens;
    let asked = args
        .batch
        .unwrap_or_else(|| wick::engine::default_batch(&gpu, &engine.header));
    if batch < asked && args.n_prompt > 0 {
        eprintln!(
            "wick: prompt batch {batch}, not {asked}: a batch holds at most the context, here {} tokens (-p + -n)",
            engine.n_ctx()
        );
    }
    // Token ids spread over the vocabulary, as llama-bench feeds random tokens.
    let n_vocab = engine.n_vocab();
    let token = |i: u32| (i.wrapping_mul(2_654_435_761) >> 7) % n_vocab;
    if args.depth > 0 {
        // Each test starts from here: a KV cache is rewound to it, a recurrent state goes back to
        // its snapshot.
        let started = Instant::now();
        let context: Vec<u32> = (0..args.depth).map(|i| token(i + 1_000_003)).collect();
        engine.prefill(&context).block_on()?;
        engine.snapshot().block_on()?;
        eprintln!(
            "wick: {} tokens of context read in {:.1} s",
            args.depth,
            started.elapsed().as_secs_f64()
        );
    }
    let mut tests = Vec::new();
    for (n_prompt, n_gen) in [(args.n_prompt, 0), (0, args.n_gen)] {
        if n_prompt + n_gen == 0 {
            continue;
        }
        let mut m = Measured {
            n_prompt,
            n_gen,
            depth: args.depth,
            samples_ns: Vec::new(),
            totals: Totals::default(),
        };
        let mut counted_from = engine.stats.totals;
        for rep in 0..=args.reps {
            let at = engine.rewind(args.depth);
            assert_eq!(at, args.depth, "a snapshot at the depth");
            let start = Instant::now();
            if n_prompt > 0 {
                let prompt: Vec<u32> = (0..n_prompt).map(token).collect();
                engine.prefill(&prompt).block_on()?;
            } else if args.read == Read::Ahead {
                decode_ahead(&mut engine, token(1), n_gen)?;
            } else {
                let mut t = token(1);
                for _ in 0..n_gen {
                    t = match args.read {
                        Read::Logits => {
                            let logits = engine.step(t, true).block_on()?;
                            wick::sampler::argmax(&logits.expect("logits were asked for"))
                        }
                        Read::Choice => engine.step_greedy(t).block_on()?,
                        Read::Ahead => unreachable!("decoded ahead"),
                        Read::Candidates => {
                            let pick = Pick::new(40, wick::sampler::Penalties::NONE, &[]);
                            engine
                                .step_candidates(t, &pick, false)
                                .block_on()?
                                .candidates[0]
                                .0
                        }
                    };
                }
            }
            // The first run warms up pipelines and caches and is not counted.
            match rep {
                0 => counted_from = engine.stats.totals,
                _ => m.samples_ns.push(start.elapsed().as_nanos() as u64),
            }
        }
        m.totals = engine.stats.totals - counted_from;
        tests.push(m);
    }
    if args.profile {
        engine.rewind(args.depth);
        print_profile(&mut engine, Profiled::Decode)?;
        if args.n_prompt > 0 {
            print_profile(&mut engine, Profiled::Prefill)?;
        }
        // Each plan a step of several sequences may run, the one of all of them first.
        for rows in engine.step_plan_rows().into_iter().rev() {
            print_profile(&mut engine, Profiled::Parallel(rows))?;
        }
    }
    let adapter = gpu.info.name.clone();
    let peak = args.peak_gbps.or_else(|| peak::known_gbps(&adapter));
    let model = Model::of(&engine.header, source.describe());
    let context = Context {
        adapter,
        backend: format!("{:?}", gpu.info.backend),
        peak,
        batch: engine.stats.chunk_tokens,
        tuned: engine.untuned_shapes().is_empty(),
        norms_fused: gpu.fuses_norms(),
        products_on_matrix_cores: engine.products_on_matrix_cores(),
        products_in_f16_tiles: engine.products_in_f16_tiles().0,
        products_on_int8_x: engine.products_on_int8_x(),
        products_by_subgroups: engine.products_summed_by_subgroups(),
        subgroup_size: gpu.subgroup_size,
        kv_cache: engine.stats.kv_cache.name(),
        attention: (engine.attention_forms().into_iter())
            .map(|(shape, form)| {
                let which = match shape.splits {
                    Some(n) if shape.tokens == 1 => format!("a deep step's ({n} splits)"),
                    Some(n) => format!("a deep step of {} tokens' ({n} splits)", shape.tokens),
                    None => format!("a prompt's ({} tokens)", shape.tokens),
                };
                format!("{which} [{form}]")
            })
            .collect(),
    };
    match args.output {
        Format::Json => print_json(&tests, &model, &context, &engine)?,
        Format::Md => print_md(&tests, &model, &context, &engine),
    }
    Ok(())
}

/// `n` greedy steps from `first`, each submitted before the one before it is read back.
fn decode_ahead(engine: &mut Engine, first: u32, n: u32) -> Result<()> {
    if !engine.steps_ahead() {
        anyhow::bail!("--read ahead: this model's steps go one at a time (a recurrent state, or rows read by token)");
    }
    let mut pending = engine
        .submit_step(StepTokens::Ids(&[first]), &Want::Choice)
        .block_on()?;
    for _ in 1..n {
        let next = engine.submit_step(StepTokens::ChosenIn(&pending), &Want::Choice);
        let next = next.block_on()?;
        engine.finish_step(pending).block_on()?;
        pending = next;
    }
    engine.finish_step(pending).block_on()?;
    Ok(())
}

/// What the tests ran on.
struct Context {
    adapter: String,
    backend: String,
    peak: Option<f64>,
    batch: u32,
    /// Every matvec ran with its tuned kernel shape (not the defaults).
    tuned: bool,
    /// Products normed their inputs in their own kernels (`--fuse-norms`).
    norms_fused: bool,
    /// Of the prompt's products, those the tuner put on the matrix cores, and all of them.
    products_on_matrix_cores: (usize, usize),
    /// Of the prompt's products, those the tuner held in f16 tiles.
    products_in_f16_tiles: usize,
    /// Of a decode step's products that may take 8-bit x, those that do, and all of them.
    products_on_int8_x: (usize, usize),
    /// Of a step's products, those that sum a row's parts by subgroup shuffles, and all of them.
    products_by_subgroups: (usize, usize),
    /// The fewest lanes of the device's subgroups, where kernels may use them.
    subgroup_size: Option<u32>,
    /// How the KV cache holds keys and values.
    kv_cache: &'static str,
    /// Each attention shape with a chosen form (a prompt's chunk, a deep step's split) and its form.
    attention: Vec<String>,
}

/// The model as llama-bench names it.
struct Model {
    filename: String,
    arch: String,
    /// The quant type holding most of the weight bytes.
    main_type: String,
    size: u64,
    n_params: u64,
}

impl Model {
    fn of(header: &Header, filename: String) -> Model {
        let mut by_type: Vec<(String, u64)> = Vec::new();
        for t in &header.tensors {
            let ty = t.ty.to_string();
            match by_type.iter_mut().find(|(name, _)| *name == ty) {
                Some((_, bytes)) => *bytes += t.bytes(),
                None => by_type.push((ty, t.bytes())),
            }
        }
        by_type.sort_by_key(|(_, bytes)| std::cmp::Reverse(*bytes));
        Model {
            filename,
            arch: header.architecture().unwrap_or("?").to_string(),
            main_type: by_type.first().map_or("?".into(), |(ty, _)| ty.clone()),
            size: header.tensors.iter().map(|t| t.bytes()).sum(),
            n_params: header.tensors.iter().map(|t| t.elements()).sum(),
        }
    }

    fn model_type(&self) -> String {
        format!(
            "{} {:.0}M {}",
            self.arch,
            self.n_params as f64 / 1e6,
            self.main_type
        )
    }
}

fn mean_sd(x: &[f64]) -> (f64, f64) {
    let n = x.len().max(1) as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

/// llama-bench's JSON fields where they exist, then Wick's own.
fn print_json(tests: &[Measured], model: &Model, c: &Context, engine: &Engine) -> Result<()> {
    let s = &engine.stats;
    let time = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let json: Vec<serde_json::Value> = tests
        .iter()
        .map(|m| {
            let samples_ns: Vec<f64> = m.samples_ns.iter().map(|&ns| ns as f64).collect();
            let (avg_ns, stddev_ns) = mean_sd(&samples_ns);
            let (avg_ts, stddev_ts) = mean_sd(&m.samples_ts());
            let gbps = m.gbps();
            serde_json::json!({
                "model_filename": model.filename, "model_type": model.model_type(),
                "model_size": model.size, "model_n_params": model.n_params,
                "n_batch": c.batch, "n_ubatch": c.batch, "n_prompt": m.n_prompt, "n_gen": m.n_gen, "n_depth": m.depth,
                "test_time_unix": time, "backends": c.backend, "gpu_info": c.adapter,
                "avg_ns": avg_ns as u64, "stddev_ns": stddev_ns as u64, "samples_ns": m.samples_ns,
                "avg_ts": avg_ts, "stddev_ts": stddev_ts, "samples_ts": m.samples_ts(),
                "ms_per_token": 1e3 / avg_ts,
                "dispatches_per_token": m.per_token(m.totals.dispatches),
                "submits_per_token": m.per_token(m.totals.runs),
                "weight_bytes_per_token": m.per_token(m.totals.weight_bytes),
                "read_bytes_per_token": m.per_token(m.totals.read_bytes),
                "record_submit_wait_ms_per_run": m.phases_ms(),
                "record_ahead_ms_per_run": m.record_ahead_ms(),
                "weight_gbps": gbps,
                "peak_gbps": c.peak,
                "peak_percent": c.peak.map(|p| 100.0 * gbps / p),
                "dispatches_per_layer": s.dispatches_per_layer,
                "kernels_tuned": c.tuned,
                "norms_fused": c.norms_fused,
                "prompt_products_on_matrix_cores": c.products_on_matrix_cores.0,
                "prompt_products": c.products_on_matrix_cores.1,
                "prompt_products_in_f16_tiles": c.products_in_f16_tiles,
                "decode_products_on_int8_x": c.products_on_int8_x.0,
                "decode_products_int8_x_may_take": c.products_on_int8_x.1,
                "decode_products_by_subgroups": c.products_by_subgroups.0,
                "decode_products": c.products_by_subgroups.1,
                "subgroup_size": c.subgroup_size,
                "kv_cache": c.kv_cache,
                "attention": c.attention,
            })
        })
        .collect();
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}

fn print_md(tests: &[Measured], model: &Model, c: &Context, engine: &Engine) {
    // Each count with the layers that have it, in order of first appearance: "7 (30 layers)", or for a
    // hybrid model "8 (18 layers), 9 (6 layers)".
    let layers = &engine.stats.dispatches_per_layer;
    let mut distinct: Vec<u32> = Vec::new();
    for &n in layers {
        if !distinct.contains(&n) {
            distinct.push(n);
        }
    }
    let per_layer: Vec<String> = distinct
        .iter()
        .map(|&n| {
            format!(
                "{n} ({} layers)",
                layers.iter().filter(|&&m| m == n).count()
            )
        })
        .collect();
    let peak = match c.peak {
        Some(p) => format!("{p:.0} GB/s peak"),
        None => "peak unknown (--peak-gbps)".into(),
    };
    println!(
        "{} ({}, {:.1} MB) on {} ({}, {peak}); prompt batch {}; dispatches per layer {}; {} kernel shapes; norms {}; prompt products on matrix cores: {} of {}, in f16 tiles: {}; decode products on 8-bit x: {} of {}, summed by subgroups: {} of {} ({}); attention: {}; KV cache {}",
        model.filename,
        model.model_type(),
        model.size as f64 / 1e6,
        c.adapter,
        c.backend,
        c.batch,
        per_layer.join(", "),
        if c.tuned { "tuned" } else { "default" },
        if c.norms_fused {
            "in their products' kernels"
        } else {
            "in kernels of their own"
        },
        c.products_on_matrix_cores.0,
        c.products_on_matrix_cores.1,
        c.products_in_f16_tiles,
        c.products_on_int8_x.0,
        c.products_on_int8_x.1,
        c.products_by_subgroups.0,
        c.products_by_subgroups.1,
        match c.subgroup_size {
            Some(lanes) => format!("subgroups of {lanes} lanes or more"),
            None => "no subgroups".into(),
        },
        match c.attention.is_empty() {
            true => "no forms to choose".to_string(),
            false => c.attention.join(", "),
        },
        c.kv_cache,
    );
    println!();
    println!("| test | t/s | ms/token | dispatches/token | submits/token | weight MB/token | read back KB/token | weight GB/s | % of peak |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for m in tests {
        let (avg, sd) = mean_sd(&m.samples_ts());
        let gbps = m.gbps();
        let percent = c
            .peak
            .map_or("-".into(), |p| format!("{:.1}", 100.0 * gbps / p));
        println!(
            "| {} | {avg:.2} ± {sd:.2} | {:.2} | {:.1} | {:.3} | {:.2} | {:.3} | {gbps:.2} | {percent} |",
            m.name(),
            1e3 / avg,
            m.per_token(m.totals.dispatches),
            m.per_token(m.totals.runs),
            m.per_token(m.totals.weight_bytes) / 1e6,
            m.per_token(m.totals.read_bytes) / 1e3,
        );
    }
    for m in tests.iter().filter(|m| m.n_gen > 0) {
        let [record, submit, wait] = m.phases_ms();
        let ahead = m.record_ahead_ms();
        // The counted runs' wall time per step, from the same runs as the parts.
        let step = m.samples_ns.iter().sum::<u64>() as f64 / 1e6 / m.totals.runs.max(1) as f64;
        println!();
        println!(
            "a decode step: {record:.2} ms recording, {submit:.2} ms submitting, {wait:.2} ms waiting \
             for the GPU and the readback, {ahead:.2} ms recording the next step while the GPU ran, \
             {:.2} ms outside the engine",
            step - record - ahead - submit - wait
        );
    }
    for m in tests.iter().filter(|m| m.n_prompt > 0) {
        let ms: Vec<f64> = m.samples_ns.iter().map(|&ns| ns as f64 / 1e6).collect();
        let (avg, sd) = mean_sd(&ms);
        println!();
        let after = match m.depth {
            0 => String::new(),
            d => format!(" after {d} tokens of context"),
        };
        println!(
            "time to first token of a {}-token prompt{after}: {avg:.1} ± {sd:.1} ms",
            m.n_prompt
        );
    }
}

/// Each pipeline's share of a decode step or of a prompt's chunk, timed dispatch by dispatch (to
/// stderr, beside the table).
fn print_profile(engine: &mut Engine, plan: Profiled) -> Result<()> {
    let Some(profile) = engine.profile(plan).block_on()? else {
        return Ok(());
    };
    let total: f64 = profile.kernels.iter().map(|(_, t)| t.as_secs_f64()).sum();
    let run = match plan {
        Profiled::Decode => "a decode step".to_string(),
        Profiled::Prefill => format!("a chunk of {} prompt tokens", engine.stats.chunk_tokens),
        Profiled::Parallel(tokens) => {
            format!("a step of {tokens} tokens of one sequence (a check's)")
        }
    };
    print_kernels(
        &format!("time of {run} by kernel, each dispatch alone"),
        &profile.kernels,
    );
    if let Some(in_plan) = &profile.in_plan {
        print_kernels("the same, each dispatch where it runs in the plan", in_plan);
    }
    eprintln!(
        "  the whole plan, its runs back to back in one submit: {:.2} ms a run",
        profile.whole.as_secs_f64() * 1e3
    );
    for (kind, layers, t) in &profile.layer_kinds {
        let ms = t.as_secs_f64() * 1e3;
        eprintln!(
            "  {layers} {kind} layers: {ms:.3} ms, {:.1}% ({:.3} ms a layer)",
            100.0 * ms / (total * 1e3),
            ms / *layers as f64
        );
    }
    Ok(())
}

/// Each kernel's time and share of their sum, under `heading`.
fn print_kernels(heading: &str, kernels: &[(String, std::time::Duration)]) {
    let total: f64 = kernels.iter().map(|(_, t)| t.as_secs_f64()).sum();
    eprintln!("{heading} ({:.2} ms in all):", total * 1e3);
    for (name, t) in kernels {
        let ms = t.as_secs_f64() * 1e3;
        eprintln!(
            "  {:<28} {:>9.3} ms {:>5.1}%",
            name,
            ms,
            100.0 * ms / (total * 1e3)
        );
    }
}
