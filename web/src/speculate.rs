//! Speculative decoding in the page: a draft model read as the model is (range reads or a file),
//! or lookup drafting from the text so far. The model must have been loaded with rows to check a
//! draft (`checkTokens`).

use super::{js_error, JsSource, Model};
use js_sys::{Function, Promise};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use wick::engine::LoadOptions;
use wick::session::Session;
use wick::speculate::{DraftModel, Drafter, Speculation};

#[wasm_bindgen]
impl Model {
    /// Loads the draft model `reader` reads beside this one, with this model's context and prompt
    /// batch, and drafts up to `draft_max` tokens a step with it from then on, each draft stopping
    /// after a token the draft gives less than `min_chance`. Refused where its vocabulary is not
    /// this model's. `on_progress` receives (bytes loaded, bytes in all).
    pub fn draft(
        &self,
        reader: JsValue,
        draft_max: u32,
        min_chance: f32,
        on_progress: Function,
    ) -> Promise {
        let session = self.session.clone();
        future_to_promise(async move {
            let source = JsSource::new(reader)?;
            let (gpu, options, tokenizer) = {
                let s = session
                    .try_borrow()
                    .map_err(|_| js_error("the model is busy"))?;
                let options = LoadOptions {
                    n_ctx: s.engine.n_ctx(),
                    batch: Some(s.engine.stats.chunk_tokens),
                    ..Default::default()
                };
                (s.engine.gpu.clone(), options, s.tokenizer.clone())
            };
            let mut progress = |done: u64, total: u64| {
                let _ = on_progress.call2(
                    &JsValue::NULL,
                    &JsValue::from_f64(done as f64),
                    &JsValue::from_f64(total as f64),
                );
            };
            let mut draft = DraftModel::load(gpu, &source, &options, &tokenizer, &mut progress)
                .await
                .map_err(js_error)?;
            // The page's WebGPU compiles a plan's kernels on its first run: here, not in the
            // first reply's timed drafts and checks.
            draft.engine.warm_up().await.map_err(js_error)?;
            warm_up_checks(&session).await?;
            let drafter = Drafter::Model(Box::new(draft));
            start(&session.borrow_mut().engine, draft_max)?;
            let mut speculation = Speculation::new(drafter, draft_max as usize);
            speculation.min_chance = min_chance;
            session.borrow_mut().speculation = Some(speculation);
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Drafts up to `draft_max` tokens a step from the prompt and the reply so far.
    pub fn lookup(&self, draft_max: u32) -> Promise {
        let session = self.session.clone();
        future_to_promise(async move {
            start(&session.borrow().engine, draft_max)?;
            warm_up_checks(&session).await?;
            session.borrow_mut().speculation =
                Some(Speculation::new(Drafter::Lookup, draft_max as usize));
            Ok(JsValue::UNDEFINED)
        })
    }
}

/// Runs the model's check once before its first reply (`Engine::warm_up`), where its cache holds
/// nothing yet: the page's WebGPU compiles a plan's kernels on its first run, and a first check
/// timed with them would make drafting look dear for most of the reply.
async fn warm_up_checks(session: &Rc<RefCell<Session>>) -> Result<(), JsValue> {
    let mut session = (session.try_borrow_mut()).map_err(|_| js_error("the model is busy"))?;
    session.engine.warm_up().await.map_err(js_error)
}

/// Refuses a draft longer than the engine's check takes.
fn start(engine: &wick::engine::Engine, draft_max: u32) -> Result<(), JsValue> {
    let rows = engine.check_tokens();
    if draft_max == 0 || draft_max + 1 > rows {
        return Err(js_error(format!(
            "a draft of {draft_max} tokens: the model was loaded to check 1 to {} (checkTokens)",
            rows.saturating_sub(1)
        )));
    }
    Ok(())
}
