//! Speculative decoding's flags (llama.cpp's spelling where it has one), and the draft model they
//! name loaded beside the model.

use crate::load;
use anyhow::{Context, Result};
use clap::Args;
use pollster::FutureExt as _;
use wick::engine::LoadOptions;
use wick::gguf::ByteSource;
use wick::session::Session;
use wick::speculate::{DraftModel, Drafter, Speculation, DRAFT_MIN_CHANCE};

/// Several tokens a step from a draft that the model checks in one run; replies are the same as
/// without (greedy, token for token; sampled, from the same distribution).
#[derive(Args, Clone)]
pub struct SpeculationArgs {
    /// A draft model: a smaller GGUF (path or URL) with the model's vocabulary, proposing the
    /// tokens the model checks
    #[arg(long = "draft", visible_alias = "model-draft", value_name = "FILE")]
    pub draft: Option<String>,
    /// Drafts from the prompt and the reply so far (where the last tokens stood before, what
    /// followed), no draft model
    #[arg(long = "lookup", conflicts_with = "draft")]
    pub lookup: bool,
    /// Tokens a step proposes at most (fewer while drafts fall)
    #[arg(long = "draft-max", default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=31))]
    pub draft_max: u32,
    /// The tokens the draft model proposes among: the N its vocabulary lists first (the commonest,
    /// in a BPE vocabulary's order of merges), so that its head reads N rows a token; 0: every
    /// token [default: 32768]
    #[arg(long = "draft-head-rows", value_name = "N")]
    pub draft_head_rows: Option<u32>,
    /// The draft model stops drafting after a token it gives less than this chance (its softmax
    /// there): tokens after an unsure one mostly fall; 0 drafts as many as the step proposes
    #[arg(long = "draft-p-min", value_name = "P", default_value_t = DRAFT_MIN_CHANCE)]
    pub draft_p_min: f32,
}

impl SpeculationArgs {
    pub fn speculating(&self) -> bool {
        self.draft.is_some() || self.lookup
    }

    /// The load options for the model: with rows to check a draft and the token before it, for
    /// each of the sequences a step holds (a server's parallel slots each check their own).
    pub fn options(&self, options: LoadOptions) -> LoadOptions {
        LoadOptions {
            check_tokens: match self.speculating() {
                true => (self.draft_max + 1) * options.sequences.max(1),
                false => 0,
            },
            ..options
        }
    }

    /// The draft model these flags name, opened: callers open it before the GPU and the model, so
    /// that a path it cannot open is said before anything loads.
    pub fn open(&self) -> Result<Draft<'_>> {
        let source = match &self.draft {
            Some(path) => Some(load::open_source(&Some(path.clone()))?),
            None => None,
        };
        Ok(Draft { args: self, source })
    }
}

/// The flags with their draft model's file opened (`SpeculationArgs::open`).
pub struct Draft<'a> {
    args: &'a SpeculationArgs,
    source: Option<Box<dyn ByteSource>>,
}

impl Draft<'_> {
    /// Sets `session` speculating as the flags say, loading the draft model on its GPU with its
    /// context and prompt batch.
    pub fn start(self, session: &mut Session) -> Result<()> {
        let args = self.args;
        let drafter = match (self.source, args.lookup) {
            (Some(source), _) => {
                let mut draft = draft_model(source, args.draft_head_rows, session)?;
                draft.engine.warm_up().block_on()?;
                Drafter::Model(Box::new(draft))
            }
            (None, true) => Drafter::Lookup,
            (None, false) => return Ok(()),
        };
        // Each plan's first run may cost more than the next (kernels compiled, memory first
        // touched): here, at load, rather than in the first checks a reply times, which would
        // make drafting look dearer than a plain step for the rest of the reply.
        session.engine.warm_up().block_on()?;
        let mut speculation = Speculation::new(drafter, args.draft_max as usize);
        speculation.min_chance = args.draft_p_min;
        session.speculation = Some(speculation);
        Ok(())
    }
}

fn draft_model(
    source: Box<dyn ByteSource>,
    head_rows: Option<u32>,
    session: &Session,
) -> Result<DraftModel> {
    // A server's parallel slots share the draft: a sequence of it for each, as long as theirs.
    let options = LoadOptions {
        n_ctx: session.engine.n_ctx(),
        batch: Some(session.engine.stats.chunk_tokens),
        sequences: session.engine.sequences(),
        head_rows: head_rows.map(|rows| if rows == 0 { u32::MAX } else { rows }),
        ..Default::default()
    };
    let bar = load::progress_bar("loading the draft");
    let gpu = session.engine.gpu.clone();
    let draft = DraftModel::load(
        gpu,
        source.as_ref(),
        &options,
        &session.tokenizer,
        &mut |done, all| {
            bar.set_length(all);
            bar.set_position(done);
        },
    )
    .block_on();
    bar.finish_and_clear();
    let mut draft = draft.with_context(|| format!("cannot draft with {}", source.describe()))?;
    crate::tuning_file::tune_new_shapes(&mut draft.engine)?;
    eprintln!("wick: drafting with {}", source.describe());
    Ok(draft)
}
